import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, realpathSync, renameSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_FILE_PATTERN, protectedPathsOf, SQLITE_SIDE_FILES } from '@stepwise/core/engine';
import { isInside } from './is-inside.js';

/** The real path of `file`, or of its nearest existing ancestor with the rest appended. */
function realOrNearest(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    const parent = path.dirname(file);
    return parent === file ? file : path.join(realOrNearest(parent), path.basename(file));
  }
}

/** Containment ignoring case: refusing `.STEPWISE` too costs nothing and holds on macOS. */
function isInsideIgnoringCase(root: string, candidate: string): boolean {
  return isInside(root.toLowerCase(), candidate.toLowerCase());
}

/** Which paths existed, and as which object, when a command started. */
export interface ProtectedSnapshot {
  readonly entries: ReadonlyMap<string, string | undefined>;
}

/** What a command did to protected paths; quarantined ones were renamed aside. */
export interface ProtectedChanges {
  readonly created: string[];
  readonly replaced: string[];
  readonly quarantined: string[];
}

function identity(file: string): string | undefined {
  try {
    const stats = lstatSync(file);
    return `${stats.dev}:${stats.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * The protected paths of one workspace (see `WorkspaceSandbox`'s `protectedPaths`): what the
 * file tools refuse, and what is checked around every command, since a missing file cannot be
 * hidden by a mount without creating it.
 */
export class ProtectedPaths {
  readonly root: string;
  /** As given (relative ones relative to the root), for the OS sandbox. */
  readonly given: readonly string[];
  readonly #paths: readonly string[];
  /** The ones inside the root as lower-case POSIX paths relative to it, for walks (string tests only). */
  readonly #relative: readonly string[];

  constructor(root: string, given: readonly string[]) {
    this.root = root;
    this.given = given;
    this.#paths = protectedPathsOf(root, given).map(realOrNearest);
    this.#relative = this.#paths
      .filter((entry) => isInsideIgnoringCase(root, entry) && entry !== root)
      .map((entry) => path.relative(root, entry).split(path.sep).join('/').toLowerCase());
  }

  /** True when a real path is protected: one of the paths, inside one, or a config file at the root. */
  covers(real: string): boolean {
    const relative = path.relative(this.root, real);
    if (relative !== '' && !relative.includes(path.sep) && CONFIG_FILE_PATTERN.test(relative)) return true;
    return this.#paths.some((entry) => isInsideIgnoringCase(entry, real));
  }

  /** True when a protected path is inside this real path (deleting it would delete them). */
  within(real: string): boolean {
    return this.#paths.some((entry) => isInsideIgnoringCase(real, entry));
  }

  /** For walks: is this workspace-relative POSIX path (reached without following a symlink) protected? */
  coversRelative(relative: string): boolean {
    const lower = relative.toLowerCase();
    if (!lower.includes('/') && CONFIG_FILE_PATTERN.test(lower)) return true;
    return this.#relative.some((entry) => lower === entry || lower.startsWith(`${entry}/`));
  }

  /** The paths a command's run is checked for, with the config files at the root now. */
  #watched(): string[] {
    const watched = new Set(this.#paths.filter((entry) => !SQLITE_SIDE_FILES.some((suffix) => entry.endsWith(suffix))));
    for (const name of safeList(this.root)) if (CONFIG_FILE_PATTERN.test(name)) watched.add(path.join(this.root, name));
    return [...watched];
  }

  snapshot(): ProtectedSnapshot {
    return { entries: new Map(this.#watched().map((entry) => [entry, identity(entry)])) };
  }

  /**
   * Compares with a snapshot taken before a command. A protected path the command created is
   * renamed aside (`.stepwise-quarantine-…`), so a planted config or store is never loaded; one
   * it replaced cannot be put back and is reported. SQLite side files are not watched: the host
   * itself creates them while a command runs.
   */
  changedSince(snapshot: ProtectedSnapshot): ProtectedChanges | undefined {
    const changes: ProtectedChanges = { created: [], replaced: [], quarantined: [] };
    const now = this.#watched();
    for (const entry of new Set([...snapshot.entries.keys(), ...now])) {
      const before = snapshot.entries.get(entry);
      const after = identity(entry);
      if (after === undefined || before === after) continue;
      const relative = path.relative(this.root, entry) || entry;
      if (before !== undefined) {
        changes.replaced.push(relative);
        continue;
      }
      changes.created.push(relative);
      const aside = path.join(
        path.dirname(entry),
        `.stepwise-quarantine-${randomBytes(4).toString('hex')}-${path.basename(entry)}`,
      );
      try {
        renameSync(entry, aside);
        changes.quarantined.push(path.relative(this.root, aside) || aside);
      } catch {
        // Reported as created; the host must not load it.
      }
    }
    return changes.created.length + changes.replaced.length > 0 ? changes : undefined;
  }
}

function safeList(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}
