import { type Dirent, readdirSync } from 'node:fs';
import path from 'node:path';
import { ALWAYS_SKIPPED, type GitignoreFilter } from './gitignore-filter.js';

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface WalkEntry {
  /** Real absolute path (no symlink is ever followed, so it stays inside the start directory). */
  readonly absolute: string;
  /** POSIX path relative to the workspace root. */
  readonly relative: string;
  readonly name: string;
  readonly type: EntryType;
  /** 1 for the start directory's own entries. */
  readonly depth: number;
}

export interface WalkOptions {
  /** `.gitignore` rules to apply; none when absent. */
  readonly gitignore?: GitignoreFilter;
  /** Deepest level to list (1 = only the start directory's entries). Default unlimited. */
  readonly maxDepth?: number;
  /** Directory names never descended into (they are still yielded). Default `['.git']`. */
  readonly skipDirectories?: readonly string[];
  /** Yield (and descend into) names starting with ".". Default true. */
  readonly includeHidden?: boolean;
}

function typeOf(entry: Dirent): EntryType {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  return 'other';
}

/**
 * Walks a directory depth-first in name order, synchronously (fast: a 20,000-file tree in
 * tens of milliseconds) — callers slice the work and yield to the event loop between slices.
 * Symlinks are reported, never followed. Unreadable directories are skipped.
 */
export function* walkTree(
  startAbsolute: string,
  startRelative: string,
  options: WalkOptions = {},
): Generator<WalkEntry> {
  const skip = new Set(options.skipDirectories ?? ALWAYS_SKIPPED);
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const stack: { absolute: string; relative: string; depth: number }[] = [
    { absolute: startAbsolute, relative: startRelative, depth: 1 },
  ];
  while (stack.length > 0) {
    const directory = stack.pop() as { absolute: string; relative: string; depth: number };
    let entries: Dirent[];
    try {
      entries = readdirSync(directory.absolute, { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    if (options.gitignore && !entries.some((entry) => entry.name === '.gitignore')) {
      options.gitignore.noRulesIn(directory.relative);
    }
    const children: { absolute: string; relative: string; depth: number }[] = [];
    for (const entry of entries) {
      if (options.includeHidden === false && entry.name.startsWith('.')) continue;
      const type = typeOf(entry);
      const relative = directory.relative === '' ? entry.name : `${directory.relative}/${entry.name}`;
      if (options.gitignore?.ignores(relative, type === 'directory')) continue;
      const absolute = path.join(directory.absolute, entry.name);
      yield { absolute, relative, name: entry.name, type, depth: directory.depth };
      if (type === 'directory' && !skip.has(entry.name) && directory.depth < maxDepth) {
        children.push({ absolute, relative, depth: directory.depth + 1 });
      }
    }
    // Reversed onto the stack so directories come out in name order.
    for (let index = children.length - 1; index >= 0; index--) stack.push(children[index] as (typeof children)[0]);
  }
}
