import path from 'node:path';
import { defineTool, SandboxViolation } from '@stepwise/core';
import { type GlobOptions, glob } from 'tinyglobby';
import { z } from 'zod';
import { openDirectory } from './directory-descriptor.js';
import { DEFAULT_IGNORED, GitignoreFilter } from './gitignore-filter.js';
import { isInside, type WorkspaceSandbox } from './workspace-sandbox.js';

export const fileGlobInput = z.object({
  pattern: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .describe('Glob pattern(s) relative to `cwd`, e.g. "src/**/*.ts". "!" negates.'),
  cwd: z.string().optional().describe('Directory the patterns are relative to. Default ".".'),
  gitignore: z.boolean().optional().describe('Honour .gitignore files and skip node_modules. Default true.'),
  dot: z.boolean().optional().describe('Match names starting with ".". Default false.'),
  includeDirectories: z.boolean().optional().describe('Return directories too. Default false (files only).'),
  maxResults: z.number().int().min(1).max(100_000).optional().describe('Default 1000.'),
});

export interface FileGlobOutput {
  /** Workspace-relative POSIX paths, sorted. */
  readonly paths: string[];
  readonly truncated: boolean;
  readonly count: number;
}

/** Patterns that would let the glob leave its directory are refused like paths. */
function checkPattern(pattern: string): void {
  const body = pattern.startsWith('!') ? pattern.slice(1) : pattern;
  const refuse = (reason: string) =>
    new SandboxViolation(`glob pattern ${JSON.stringify(pattern)} is refused: ${reason}`, {
      location: pattern,
      details: { reason: 'outside-workspace' },
    });
  if (body.includes('\0')) throw refuse('it contains a NUL byte');
  if (body.startsWith('/') || body.startsWith('\\') || /^[A-Za-z]:/.test(body)) throw refuse('it is absolute');
  if (body.startsWith('~')) throw refuse('"~" is not expanded');
  if (body.split(/[\\/]/).some((segment) => segment === '..' || /^\.\.[{,}]|[{,]\.\.[},]/.test(segment))) {
    throw refuse('it climbs out with ".."');
  }
}

type Listing = ReturnType<typeof listConfined>;

/** Lists a directory only if, once opened, it really is one `accept` allows (see `directory-descriptor.ts`). */
function listConfined(directory: string, accept: (real: string) => boolean) {
  const opened = openDirectory(directory, accept);
  if (!opened)
    throw Object.assign(new Error(`${directory} is not a directory inside the workspace`), { code: 'ENOENT' });
  try {
    return opened.list();
  } finally {
    opened.close();
  }
}

/**
 * The `readdir` tinyglobby's crawler uses, going through an opened and checked directory, so a
 * directory swapped for a symlink while the glob runs lists nothing from where it leads.
 */
function confinedReaddir(accept: (real: string) => boolean) {
  const readdirSync = (directory: string) => listConfined(directory, accept);
  const readdir = (
    directory: string,
    _options: unknown,
    callback: (error: Error | null, entries?: Listing) => void,
  ) => {
    let entries: Listing;
    try {
      entries = listConfined(directory, accept);
    } catch (error) {
      callback(error as Error);
      return;
    }
    callback(null, entries);
  };
  return { readdir, readdirSync } as unknown as GlobOptions['fs'];
}

/** `file_glob`: files matching glob patterns (tinyglobby), gitignore-aware, capped, never following symlinks. */
export function fileGlobTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_glob',
    description:
      'List workspace files matching glob patterns (e.g. "src/**/*.ts"). Honours .gitignore by default; results are sorted and capped.',
    input: fileGlobInput,
    effect: 'read',
    idempotent: true,
    async execute(input, context): Promise<FileGlobOutput> {
      const list = Array.isArray(input.pattern) ? input.pattern : [input.pattern];
      for (const pattern of list) checkPattern(pattern);
      const cwd = await sandbox.resolve(input.cwd ?? '.');
      const root = await sandbox.realRoot();
      const useGitignore = input.gitignore !== false;
      const guarded = await sandbox.protectedPaths();
      const found = await glob(list, {
        fs: confinedReaddir((real) => isInside(root, real) && !guarded.covers(real)),
        cwd: cwd.absolute,
        dot: input.dot ?? false,
        onlyFiles: !(input.includeDirectories ?? false),
        followSymbolicLinks: false,
        expandDirectories: false,
        ignore: (useGitignore ? DEFAULT_IGNORED : ['.git']).map((name) => `**/${name}/**`),
        signal: context.signal,
      });
      const filter = useGitignore ? new GitignoreFilter(root) : undefined;
      const paths: string[] = [];
      for (const entry of found) {
        const isDirectory = entry.endsWith('/');
        const absolute = path.resolve(cwd.absolute, entry);
        if (!(await sandbox.contains(absolute))) continue;
        const relative = await sandbox.relativeOf(absolute);
        if (relative === '' || guarded.coversRelative(relative)) continue;
        if (filter?.ignores(relative, isDirectory)) continue;
        paths.push(isDirectory ? `${relative}/` : relative);
      }
      paths.sort();
      const maxResults = input.maxResults ?? 1000;
      return { paths: paths.slice(0, maxResults), truncated: paths.length > maxResults, count: paths.length };
    },
  });
}
