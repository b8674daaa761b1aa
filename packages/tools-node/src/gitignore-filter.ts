import { readFileSync } from 'node:fs';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';

/** Directories skipped by every walk, whatever the options. */
export const ALWAYS_SKIPPED = ['.git'];
/** Directories skipped when `.gitignore` rules apply, even in a tree without a `.gitignore`. */
export const DEFAULT_IGNORED = ['.git', 'node_modules'];

/**
 * Answers "does git ignore this path?" from every `.gitignore` between the workspace root
 * and the path (plus `.git/info/exclude`), loading each file once. Paths are POSIX paths
 * relative to the workspace root. Like git, a file inside an ignored directory is ignored.
 */
export class GitignoreFilter {
  readonly #root: string;
  readonly #rules = new Map<string, Ignore | null>();
  readonly #directories = new Map<string, boolean>();

  /** `root` is the real workspace root. */
  constructor(root: string) {
    this.#root = root;
  }

  /** Is this path ignored? Checks the rules of its ancestors' directories too. */
  ignores(relative: string, isDirectory: boolean): boolean {
    const parent = path.posix.dirname(relative);
    if (parent !== '.' && parent !== '' && this.ignoresDirectory(parent)) return true;
    return this.#matches(relative, isDirectory);
  }

  /** Cached answer for a directory (and so for everything under it). */
  ignoresDirectory(relative: string): boolean {
    const cached = this.#directories.get(relative);
    if (cached !== undefined) return cached;
    const parent = path.posix.dirname(relative);
    const ignored = (parent !== '.' && parent !== '' && this.ignoresDirectory(parent)) || this.#matches(relative, true);
    this.#directories.set(relative, ignored);
    return ignored;
  }

  /** Marks a directory's `.gitignore` as known to be absent (the walker saw its entries). */
  noRulesIn(directory: string): void {
    if (!this.#rules.has(directory)) this.#rules.set(directory, null);
  }

  #matches(relative: string, isDirectory: boolean): boolean {
    const name = path.posix.basename(relative);
    if (DEFAULT_IGNORED.includes(name) && isDirectory) return true;
    let directory = path.posix.dirname(relative);
    // Rules of deeper directories override shallower ones, so test from the nearest outwards.
    for (;;) {
      const key = directory === '.' ? '' : directory;
      const rules = this.#load(key);
      if (rules) {
        const local = key === '' ? relative : relative.slice(key.length + 1);
        const result = rules.test(isDirectory ? `${local}/` : local);
        if (result.ignored) return true;
        if (result.unignored) return false;
      }
      if (key === '') return false;
      directory = path.posix.dirname(key);
    }
  }

  #load(directory: string): Ignore | null {
    const cached = this.#rules.get(directory);
    if (cached !== undefined) return cached;
    const absolute = path.join(this.#root, directory);
    const sources = [readText(path.join(absolute, '.gitignore'))];
    if (directory === '') sources.push(readText(path.join(absolute, '.git', 'info', 'exclude')));
    const text = sources.filter((source) => source !== undefined).join('\n');
    const rules = text.trim() === '' ? null : ignore().add(text);
    this.#rules.set(directory, rules);
    return rules;
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
