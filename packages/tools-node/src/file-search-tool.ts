import { closeSync, constants, openSync, readSync } from 'node:fs';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { defineTool, ErrorCodes, ToolError } from '@stepwise/core';
import ignore, { type Ignore } from 'ignore';
import { z } from 'zod';
import { descriptorMode, whereOpened } from './directory-descriptor.js';
import { GitignoreFilter } from './gitignore-filter.js';
import { isBinary } from './text-files.js';
import { walkTree } from './walk-tree.js';
import { isInside, type WorkspaceSandbox } from './workspace-sandbox.js';

// O_NONBLOCK: opening a FIFO must not wait for a writer; the type check that follows refuses it.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
/** Work is done in slices this long, then the event loop runs (timeouts, cancellation). */
const SLICE_MS = 8;

const patterns = z.union([z.string(), z.array(z.string())]);

export const fileSearchInput = z.object({
  query: z.string().min(1).max(1000).describe('Text to find (literal by default).'),
  regex: z.boolean().optional().describe('Treat query as a JavaScript regular expression. Default false.'),
  caseSensitive: z.boolean().optional().describe('Default true.'),
  path: z.string().optional().describe('Directory (or file) to search, relative to the workspace. Default ".".'),
  include: patterns.optional().describe('Only files matching these gitignore-style patterns, e.g. "*.ts".'),
  exclude: patterns.optional().describe('Skip files matching these gitignore-style patterns.'),
  gitignore: z
    .boolean()
    .optional()
    .describe('Honour .gitignore files and skip node_modules (default true). .git is always skipped.'),
  maxResults: z.number().int().min(1).max(10_000).optional().describe('Matching lines to return. Default 200.'),
  maxLineLength: z
    .number()
    .int()
    .min(20)
    .max(10_000)
    .optional()
    .describe('Longest preview in characters; longer lines are cut around the match. Default 300.'),
  maxFileBytes: z.number().int().min(1).optional().describe('Files larger than this are skipped. Default 8 MiB.'),
});

export interface SearchMatch {
  readonly path: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based, in UTF-16 code units of the line. */
  readonly column: number;
  readonly preview: string;
}

export interface FileSearchOutput {
  readonly matches: SearchMatch[];
  /** True when `maxResults` stopped the search early. */
  readonly truncated: boolean;
  readonly filesSearched: number;
  /** Binary, too large or unreadable files. */
  readonly filesSkipped: number;
}

interface Matcher {
  /** Cheap byte-level test: false means the file cannot match. */
  mayMatch(buffer: Buffer): boolean;
  /** Offsets (UTF-16) of each match start in `text`, in order. */
  find(text: string): Iterable<{ index: number; length: number }>;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function createMatcher(query: string, regex: boolean, caseSensitive: boolean): Matcher {
  let expression: RegExp;
  try {
    expression = new RegExp(regex ? query : escapeRegex(query), caseSensitive ? 'gm' : 'gim');
  } catch (error) {
    throw new ToolError({
      code: ErrorCodes.ARGUMENTS_INVALID,
      message: `invalid regular expression: ${error instanceof Error ? error.message : error}`,
      location: 'query',
    });
  }
  const needle = !regex && caseSensitive ? Buffer.from(query) : undefined;
  return {
    mayMatch: (buffer) => (needle ? buffer.indexOf(needle) !== -1 : true),
    *find(text) {
      expression.lastIndex = 0;
      for (let match = expression.exec(text); match !== null; match = expression.exec(text)) {
        yield { index: match.index, length: match[0].length };
        if (match[0].length === 0) expression.lastIndex++;
      }
    },
  };
}

function patternFilter(value: string | string[] | undefined): Ignore | undefined {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? value : [value];
  return list.length === 0 ? undefined : ignore().add(list);
}

function preview(line: string, column: number, length: number, maxLength: number): string {
  if (line.length <= maxLength) return line;
  const room = Math.max(0, maxLength - Math.min(length, maxLength));
  let start = Math.max(0, column - 1 - Math.floor(room / 2));
  const end = Math.min(line.length, start + maxLength);
  start = Math.max(0, end - maxLength);
  return `${start > 0 ? '…' : ''}${line.slice(start, end)}${end < line.length ? '…' : ''}`;
}

/** Reads a whole file into a reused buffer, growing it up to `maxBytes`; undefined when larger or unreadable. */
class FileReader {
  #buffer = Buffer.allocUnsafe(1024 * 1024);

  /** `check`, when given, must accept the opened descriptor (a path that was not reached through an open directory). */
  read(at: string, maxBytes: number, check?: (descriptor: number) => boolean): Buffer | undefined {
    let descriptor: number;
    try {
      descriptor = openSync(at, READ_FLAGS);
    } catch {
      return undefined;
    }
    try {
      if (check && !check(descriptor)) return undefined;
      let filled = 0;
      for (;;) {
        if (filled === this.#buffer.length) {
          if (filled > maxBytes) return undefined;
          const grown = Buffer.allocUnsafe(this.#buffer.length * 2);
          this.#buffer.copy(grown, 0, 0, filled);
          this.#buffer = grown;
        }
        const bytesRead = readSync(descriptor, this.#buffer, filled, this.#buffer.length - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return filled > maxBytes ? undefined : this.#buffer.subarray(0, filled);
    } catch {
      return undefined;
    } finally {
      closeSync(descriptor);
    }
  }
}

/** Pushes the matching lines of one file's text, one entry per line, until `maxResults`. */
function collectMatches(
  text: string,
  relative: string,
  matcher: Matcher,
  matches: SearchMatch[],
  limits: { maxResults: number; maxLineLength: number },
): void {
  let line = 1;
  let lineStart = 0;
  let scanned = 0;
  let lastLine = 0;
  for (const found of matcher.find(text)) {
    // Matches come in order, so lines are counted incrementally.
    for (let newline = text.indexOf('\n', scanned); newline !== -1 && newline < found.index; ) {
      line++;
      lineStart = newline + 1;
      newline = text.indexOf('\n', lineStart);
    }
    scanned = lineStart;
    if (line === lastLine) continue;
    lastLine = line;
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd === -1) lineEnd = text.length;
    if (lineEnd > lineStart && text.charCodeAt(lineEnd - 1) === 13) lineEnd--;
    const column = found.index - lineStart + 1;
    matches.push({
      path: relative,
      line,
      column,
      preview: preview(text.slice(lineStart, lineEnd), column, found.length, limits.maxLineLength),
    });
    if (matches.length >= limits.maxResults) return;
  }
}

interface SearchFile {
  /** Where to open it (through its open directory when walked). */
  readonly at: string;
  readonly relative: string;
  readonly type: string;
  /** When set, the opened descriptor must pass it. */
  readonly check?: (descriptor: number) => boolean;
}

/** The files to search: the walk of a directory, or the one file given (checked once opened). */
async function filesToSearch(
  sandbox: WorkspaceSandbox,
  input: { path?: string | undefined; gitignore?: boolean | undefined },
): Promise<Iterable<SearchFile>> {
  const start = await sandbox.resolve(input.path ?? '.');
  const root = await sandbox.realRoot();
  const stats = await sandbox.fileSystem.stat(start.absolute).catch(() => undefined);
  if (!stats) {
    throw new ToolError({
      code: ErrorCodes.TOOL_NOT_FOUND,
      message: `${input.path} does not exist`,
      location: input.path ?? '.',
    });
  }
  const guarded = await sandbox.protectedPaths();
  const accepts = (at: string) => (descriptor: number) => {
    const real = whereOpened(descriptor, at);
    return real !== undefined && isInside(root, real) && !guarded.covers(real);
  };
  if (!stats.isDirectory())
    return [{ at: start.absolute, relative: start.relative, type: 'file', check: accepts(start.absolute) }];
  const gitignore = input.gitignore === false ? undefined : new GitignoreFilter(root);
  const walk = walkTree(start.absolute, start.relative, {
    root,
    skip: (relative) => guarded.coversRelative(relative),
    ...(gitignore ? { gitignore } : {}),
  });
  // Files reached through a directory opened by descriptor are inside it; without /proc each is checked.
  if (descriptorMode() === 'proc') return walk;
  return (function* () {
    for (const entry of walk) yield { ...entry, check: accepts(entry.at) };
  })();
}

/** `file_search`: literal or regex search over workspace files, gitignore-aware, capped. */
export function fileSearchTool(sandbox: WorkspaceSandbox) {
  return defineTool({
    name: 'file_search',
    description:
      'Search file contents in the workspace for a literal string or a regular expression. Skips binary files, .git, node_modules and gitignored paths. Returns path, line, column and a preview per matching line.',
    input: fileSearchInput,
    effect: 'read',
    idempotent: true,
    async execute(input, context): Promise<FileSearchOutput> {
      const matcher = createMatcher(input.query, input.regex ?? false, input.caseSensitive ?? true);
      const limits = { maxResults: input.maxResults ?? 200, maxLineLength: input.maxLineLength ?? 300 };
      const maxFileBytes = input.maxFileBytes ?? 8 * 1024 * 1024;
      const include = patternFilter(input.include);
      const exclude = patternFilter(input.exclude);
      const files = await filesToSearch(sandbox, input);
      const reader = new FileReader();
      const matches: SearchMatch[] = [];
      let filesSearched = 0;
      let filesSkipped = 0;
      let sliceStarted = performance.now();
      for (const entry of files) {
        if (entry.type !== 'file') continue;
        if (include && !include.ignores(entry.relative)) continue;
        if (exclude?.ignores(entry.relative)) continue;
        if (performance.now() - sliceStarted > SLICE_MS) {
          await yieldToEventLoop();
          context.signal.throwIfAborted();
          sliceStarted = performance.now();
        }
        const buffer = reader.read(entry.at, maxFileBytes, entry.check);
        if (!buffer) {
          filesSkipped++;
          continue;
        }
        filesSearched++;
        if (!matcher.mayMatch(buffer)) continue;
        if (isBinary(buffer)) {
          filesSkipped++;
          continue;
        }
        collectMatches(buffer.toString('utf8'), entry.relative, matcher, matches, limits);
        if (matches.length >= limits.maxResults) return { matches, truncated: true, filesSearched, filesSkipped };
      }
      return { matches, truncated: false, filesSearched, filesSkipped };
    },
  });
}
