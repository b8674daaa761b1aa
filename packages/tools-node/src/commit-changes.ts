import { randomBytes } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import path from 'node:path';
import { ErrorCodes, SandboxViolation, ToolError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import { type OpenedDirectory, openChildDirectory, openDirectory } from './directory-descriptor.js';
import { fileSystemError } from './file-errors.js';
import { errorCode, type FileSystem } from './file-system.js';

/** One file's new state, computed and validated before anything is written. */
export interface FileChange {
  /** Real absolute path (from the sandbox). */
  readonly absolute: string;
  /** Workspace path, for messages. */
  readonly relative: string;
  /** New contents; `null` deletes the file. */
  readonly contents: Buffer | null;
  /**
   * Contents when they were read; `null` when the file must not exist yet (exclusive create);
   * absent when any previous state is fine (a single-file overwrite, which has nothing to roll back).
   */
  readonly before?: Buffer | null;
  /** Size and mtime when read: the file must be unchanged at commit time. */
  readonly expected?: { readonly size: number; readonly mtimeMs: number };
  /** Permission bits for the new file (default: the old file's, else 0o666 minus umask). */
  readonly mode?: number;
}

export interface CommitOptions {
  /** Create missing parent directories. Default false. */
  readonly createDirectories?: boolean;
  /** fsync each file before it is renamed into place. Default true. */
  readonly sync?: boolean;
}

const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
const EXCLUSIVE = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | NO_FOLLOW;

/** A name in the target's own directory, so the final rename never crosses file systems. */
function temporaryName(suffix: string): string {
  return `.stepwise-${randomBytes(6).toString('hex')}.${suffix}`;
}

function moved(change: FileChange): SandboxViolation {
  return new SandboxViolation(`the directory of ${change.relative} changed while it was being written`, {
    location: change.relative,
    details: { reason: 'symlink-escape' },
  });
}

/**
 * The directories of a commit, each opened once and checked to be exactly where the sandbox
 * approved it; every file operation names its file through the open directory
 * (see `directory-descriptor.ts`), so a parent swapped for a symlink cannot redirect a write.
 */
class Directories {
  readonly #open = new Map<string, OpenedDirectory>();

  get(change: FileChange): OpenedDirectory {
    const directory = path.dirname(change.absolute);
    let opened = this.#open.get(directory);
    if (!opened) {
      opened = openDirectory(directory, (real) => real === directory);
      if (!opened && !existsSync(directory)) {
        throw Object.assign(new Error(`ENOENT: no such file or directory, ${directory}`), { code: 'ENOENT' });
      }
      if (!opened) throw moved(change);
      this.#open.set(directory, opened);
    }
    return opened;
  }

  /** The open directory of a change, checked to be still where it was approved (before a rename makes a file appear). */
  checked(change: FileChange): OpenedDirectory {
    const opened = this.get(change);
    if (opened.where() !== opened.real) throw moved(change);
    return opened;
  }

  close(): void {
    for (const opened of this.#open.values()) opened.close();
    this.#open.clear();
  }
}

/**
 * Creates the missing directories above a change, one level at a time through the directory
 * above (opened, never through a symlink); returns the topmost directory it created.
 */
async function createDirectories(fileSystem: FileSystem, change: FileChange): Promise<string | undefined> {
  const target = path.dirname(change.absolute);
  const missing: string[] = [];
  let existing = target;
  let opened = openDirectory(existing, (real) => real === existing);
  while (!opened) {
    if (path.dirname(existing) === existing) throw moved(change);
    missing.unshift(path.basename(existing));
    existing = path.dirname(existing);
    opened = openDirectory(existing, (real) => real === existing);
  }
  let top: string | undefined;
  try {
    for (const name of missing) {
      const expected = path.join(opened.real, name);
      try {
        await fileSystem.mkdir(opened.child(name));
        top ??= expected;
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw error;
      }
      const next = openChildDirectory(opened, name, (real) => real === expected);
      if (!next) throw moved(change);
      opened.close();
      opened = next;
    }
  } finally {
    opened.close();
  }
  return top;
}

/**
 * Writes `contents` to a fresh temporary file created exclusively (O_EXCL | O_NOFOLLOW: a
 * symlink planted at that name is never followed) in the change's open directory; returns its name.
 */
async function writeTemporary(
  fileSystem: FileSystem,
  directory: OpenedDirectory,
  change: FileChange,
  contents: Buffer,
  options: CommitOptions,
): Promise<string> {
  const name = temporaryName('tmp');
  const handle = await fileSystem.open(directory.child(name), EXCLUSIVE, change.mode ?? 0o666);
  try {
    await handle.writeFile(contents);
    if (change.mode !== undefined) await handle.chmod(change.mode);
    if (options.sync !== false) await handle.datasync();
  } finally {
    await handle.close();
  }
  return name;
}

async function currentState(fileSystem: FileSystem, file: string) {
  try {
    const stats = await fileSystem.lstat(file);
    return { exists: true, size: stats.size, mtimeMs: stats.mtimeMs, symlink: stats.isSymbolicLink() };
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { exists: false, size: 0, mtimeMs: 0, symlink: false };
    throw error;
  }
}

function conflict(change: FileChange, message: string): ToolError {
  return new ToolError({ code: ErrorCodes.EDIT_CONFLICT, message, location: change.relative });
}

/** Phase two: nothing changed since it was read. */
async function checkUnchanged(fileSystem: FileSystem, directories: Directories, change: FileChange): Promise<void> {
  const state = await currentState(fileSystem, directories.get(change).child(path.basename(change.absolute)));
  if (change.before === null && state.exists) throw conflict(change, `${change.relative} already exists`);
  if (change.before !== null && change.before !== undefined && !state.exists) {
    throw conflict(change, `${change.relative} was deleted while it was being edited`);
  }
  if (change.expected && (state.size !== change.expected.size || state.mtimeMs !== change.expected.mtimeMs)) {
    throw conflict(change, `${change.relative} changed while it was being edited; read it again`);
  }
}

interface CommitState {
  readonly directories: Directories;
  readonly temporaries: Map<FileChange, string>;
  readonly createdDirectories: { top: string; deepest: string }[];
  readonly applied: FileChange[];
  readonly deleted: Map<FileChange, string>;
}

/** Phase three for one change: move it into place (or aside, for a delete). */
async function applyChange(fileSystem: FileSystem, state: CommitState, change: FileChange): Promise<void> {
  const directory = state.directories.checked(change);
  const target = directory.child(path.basename(change.absolute));
  const temporary = state.temporaries.get(change);
  if (change.contents === null) {
    // Moved aside rather than unlinked, so a later failure can put it back.
    const aside = temporaryName('deleted');
    await fileSystem.rename(target, directory.child(aside));
    state.deleted.set(change, aside);
  } else if (change.before === null && temporary) {
    // link() fails with EEXIST when anything, even a dangling symlink, took the name.
    try {
      await fileSystem.link(directory.child(temporary), target);
      await fileSystem.unlink(directory.child(temporary));
    } catch (error) {
      if (errorCode(error) === 'EEXIST') throw conflict(change, `${change.relative} already exists`);
      if (errorCode(error) !== 'EPERM' && errorCode(error) !== 'ENOTSUP' && errorCode(error) !== 'ENOSYS') {
        throw error;
      }
      // File systems without hard links: the existence check above is the best left.
      await fileSystem.rename(directory.child(temporary), target);
    }
    state.temporaries.delete(change);
  } else if (temporary) {
    await fileSystem.rename(directory.child(temporary), target);
    state.temporaries.delete(change);
  }
  state.applied.push(change);
}

/**
 * Applies every change or none. Phase one writes all new contents to temporary files
 * beside their targets; phase two checks nothing changed since it was read and renames
 * the temporaries into place. If anything fails, every file already replaced is restored
 * from its original contents and every temporary is removed.
 */
export async function commitChanges(
  fileSystem: FileSystem,
  changes: readonly FileChange[],
  options: CommitOptions = {},
): Promise<void> {
  const state: CommitState = {
    directories: new Directories(),
    temporaries: new Map(),
    createdDirectories: [],
    applied: [],
    deleted: new Map(),
  };
  try {
    for (const change of changes) {
      if (change.contents === null) continue;
      if (options.createDirectories) {
        const top = await createDirectories(fileSystem, change);
        if (top !== undefined) state.createdDirectories.push({ top, deepest: path.dirname(change.absolute) });
      }
      const directory = state.directories.get(change);
      state.temporaries.set(change, await writeTemporary(fileSystem, directory, change, change.contents, options));
    }
    for (const change of changes) await checkUnchanged(fileSystem, state.directories, change);
    for (const change of changes) await applyChange(fileSystem, state, change);
  } catch (error) {
    await undo(fileSystem, state, changes, options, error);
  }
  try {
    for (const [change, aside] of state.deleted) {
      await fileSystem.unlink(state.directories.get(change).child(aside)).catch(() => undefined);
    }
  } finally {
    state.directories.close();
  }
}

/** Restores what was applied, removes temporaries and created directories, and throws the typed error. */
async function undo(
  fileSystem: FileSystem,
  state: CommitState,
  changes: readonly FileChange[],
  options: CommitOptions,
  error: unknown,
): Promise<never> {
  const rollbackErrors = await rollback(fileSystem, state, options);
  for (const [change, temporary] of state.temporaries) {
    await fileSystem.unlink(state.directories.get(change).child(temporary)).catch(() => undefined);
  }
  state.directories.close();
  for (const created of state.createdDirectories.reverse()) {
    await removeEmptyTree(fileSystem, created.top, created.deepest);
  }
  const failed = changes.find((change) => !state.applied.includes(change)) ?? changes[0];
  const typed = fileSystemError(error, failed?.relative ?? '', 'write');
  if (rollbackErrors.length > 0) {
    throw new ToolError({
      code: typed.code,
      message: `${typed.message}; restoring ${rollbackErrors.map((entry) => entry.path).join(', ')} also failed`,
      location: typed.location ?? '',
      details: { rollbackFailed: rollbackErrors },
      cause: error,
    });
  }
  throw typed;
}

async function rollback(
  fileSystem: FileSystem,
  state: CommitState,
  options: CommitOptions,
): Promise<{ path: string; message: string }[]> {
  const failures: { path: string; message: string }[] = [];
  for (const change of [...state.applied].reverse()) {
    try {
      const directory = state.directories.get(change);
      const target = directory.child(path.basename(change.absolute));
      const aside = state.deleted.get(change);
      if (aside) {
        await fileSystem.rename(directory.child(aside), target);
        state.deleted.delete(change);
      } else if (change.before === null) {
        await fileSystem.unlink(target);
      } else if (change.before !== undefined) {
        const temporary = await writeTemporary(fileSystem, directory, change, change.before, options);
        await fileSystem.rename(directory.child(temporary), target);
      }
    } catch (error) {
      failures.push({ path: change.relative, message: messageOf(error) });
    }
  }
  return failures;
}

/** Removes directories this commit created, deepest first, only while they are empty. */
async function removeEmptyTree(fileSystem: FileSystem, top: string, deepest: string): Promise<void> {
  let directory = deepest;
  while (directory.length >= top.length) {
    try {
      await fileSystem.rmdir(directory);
    } catch {
      return;
    }
    if (directory === top) return;
    directory = path.dirname(directory);
  }
}
