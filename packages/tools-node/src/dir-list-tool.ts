import { lstatSync } from 'node:fs';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { DEFAULT_IGNORED, GitignoreFilter } from './gitignore-filter.js';
import { type EntryType, walkTree } from './walk-tree.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

export const dirListInput = z.object({
  path: z.string().optional().describe('Directory relative to the workspace. Default ".".'),
  depth: z.number().int().min(1).max(32).optional().describe('Levels to list (1 = direct entries). Default 1.'),
  includeHidden: z.boolean().optional().describe('Include names starting with ".". Default true.'),
  gitignore: z.boolean().optional().describe('Leave out gitignored entries. Default false.'),
  maxEntries: z.number().int().min(1).max(100_000).optional().describe('Default 1000.'),
});

export interface DirectoryEntry {
  /** Workspace-relative POSIX path. */
  readonly path: string;
  readonly name: string;
  readonly type: EntryType;
  /** Bytes for files (and the link's own size for symlinks); 0 for directories. */
  readonly size: number;
}

export interface DirListOutput {
  readonly path: string;
  readonly entries: DirectoryEntry[];
  readonly truncated: boolean;
}

/** `dir_list`: entries of a directory with type and size; deeper levels on request. Symlinks are listed, not followed. */
export function dirListTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'dir_list',
    description:
      'List a workspace directory: each entry with its type (file, directory, symlink) and size. depth > 1 lists subdirectories too (not .git or node_modules).',
    input: dirListInput,
    effect: 'read',
    idempotent: true,
    async execute(input, context): Promise<DirListOutput> {
      const resolved = await sandbox.resolve(input.path ?? '.');
      const stats = await sandbox.fileSystem.stat(resolved.absolute).catch(() => undefined);
      if (!stats?.isDirectory()) {
        throw new ToolError({
          code: stats ? ErrorCodes.TOOL_FAILED : ErrorCodes.TOOL_NOT_FOUND,
          message: stats ? `${input.path} is not a directory` : `${input.path} does not exist`,
          location: input.path ?? '.',
        });
      }
      const maxEntries = input.maxEntries ?? 1000;
      const root = await sandbox.realRoot();
      const guarded = await sandbox.protectedPaths();
      const gitignore = input.gitignore ? new GitignoreFilter(root) : undefined;
      const entries: DirectoryEntry[] = [];
      let truncated = false;
      let sliceStarted = performance.now();
      for (const entry of walkTree(resolved.absolute, resolved.relative, {
        maxDepth: input.depth ?? 1,
        skipDirectories: DEFAULT_IGNORED,
        includeHidden: input.includeHidden ?? true,
        root,
        skip: (relative) => guarded.coversRelative(relative),
        ...(gitignore ? { gitignore } : {}),
      })) {
        if (entries.length >= maxEntries) {
          truncated = true;
          break;
        }
        let size = 0;
        if (entry.type !== 'directory') {
          try {
            size = lstatSync(entry.at).size;
          } catch {
            size = 0;
          }
        }
        entries.push({ path: entry.relative, name: entry.name, type: entry.type, size });
        if (performance.now() - sliceStarted > 8) {
          await yieldToEventLoop();
          context.signal.throwIfAborted();
          sliceStarted = performance.now();
        }
      }
      return { path: resolved.relative === '' ? '.' : resolved.relative, entries, truncated };
    },
  });
}
