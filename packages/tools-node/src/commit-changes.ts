import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import path from 'node:path';
import { ErrorCodes, SandboxViolation, ToolError } from '@stepwise/core';
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
function temporaryPath(absolute: string, suffix: string): string {
  return path.join(path.dirname(absolute), `.stepwise-${randomBytes(6).toString('hex')}.${suffix}`);
}

/**
 * Writes `contents` to a fresh temporary file created exclusively (O_EXCL | O_NOFOLLOW: a
 * symlink planted at that name is never followed) and checks that the directory it landed
 * in is still the one the sandbox approved.
 */
async function writeTemporary(
  fileSystem: FileSystem,
  change: FileChange,
  contents: Buffer,
  options: CommitOptions,
): Promise<string> {
  const temporary = temporaryPath(change.absolute, 'tmp');
  const handle = await fileSystem.open(temporary, EXCLUSIVE, change.mode ?? 0o666);
  try {
    await handle.writeFile(contents);
    if (change.mode !== undefined) await handle.chmod(change.mode);
    if (options.sync !== false) await handle.datasync();
  } finally {
    await handle.close();
  }
  // A parent directory swapped for a symlink after the check would put the file elsewhere.
  const landed = await fileSystem.realpath(temporary).catch(() => undefined);
  if (landed !== temporary) {
    await fileSystem.unlink(temporary).catch(() => undefined);
    throw new SandboxViolation(`the directory of ${change.relative} changed while it was being written`, {
      location: change.relative,
      details: { reason: 'symlink-escape' },
    });
  }
  return temporary;
}

async function currentState(fileSystem: FileSystem, absolute: string) {
  try {
    const stats = await fileSystem.lstat(absolute);
    return { exists: true, size: stats.size, mtimeMs: stats.mtimeMs, symlink: stats.isSymbolicLink() };
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { exists: false, size: 0, mtimeMs: 0, symlink: false };
    throw error;
  }
}

function conflict(change: FileChange, message: string): ToolError {
  return new ToolError({ code: ErrorCodes.EDIT_CONFLICT, message, location: change.relative });
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
  const temporaries = new Map<FileChange, string>();
  const createdDirectories: { top: string; deepest: string }[] = [];
  const applied: FileChange[] = [];
  const deleted = new Map<FileChange, string>();
  try {
    for (const change of changes) {
      if (change.contents === null) continue;
      if (options.createDirectories) {
        const created = await fileSystem.mkdir(path.dirname(change.absolute), { recursive: true });
        if (created !== undefined) createdDirectories.push({ top: created, deepest: path.dirname(change.absolute) });
      }
      temporaries.set(change, await writeTemporary(fileSystem, change, change.contents, options));
    }
    for (const change of changes) {
      const state = await currentState(fileSystem, change.absolute);
      if (change.before === null && state.exists) throw conflict(change, `${change.relative} already exists`);
      if (change.before !== null && change.before !== undefined && !state.exists) {
        throw conflict(change, `${change.relative} was deleted while it was being edited`);
      }
      if (change.expected && (state.size !== change.expected.size || state.mtimeMs !== change.expected.mtimeMs)) {
        throw conflict(change, `${change.relative} changed while it was being edited; read it again`);
      }
    }
    for (const change of changes) {
      const temporary = temporaries.get(change);
      if (change.contents === null) {
        // Moved aside rather than unlinked, so a later failure can put it back.
        const aside = temporaryPath(change.absolute, 'deleted');
        await fileSystem.rename(change.absolute, aside);
        deleted.set(change, aside);
      } else if (change.before === null && temporary) {
        // link() fails with EEXIST when anything, even a dangling symlink, took the name.
        try {
          await fileSystem.link(temporary, change.absolute);
          await fileSystem.unlink(temporary);
        } catch (error) {
          if (errorCode(error) === 'EEXIST') throw conflict(change, `${change.relative} already exists`);
          if (errorCode(error) !== 'EPERM' && errorCode(error) !== 'ENOTSUP' && errorCode(error) !== 'ENOSYS') {
            throw error;
          }
          // File systems without hard links: the existence check above is the best left.
          await fileSystem.rename(temporary, change.absolute);
        }
        temporaries.delete(change);
      } else if (temporary) {
        await fileSystem.rename(temporary, change.absolute);
        temporaries.delete(change);
      }
      applied.push(change);
    }
  } catch (error) {
    const rollbackErrors = await rollback(fileSystem, applied, deleted, options);
    for (const temporary of temporaries.values()) await fileSystem.unlink(temporary).catch(() => undefined);
    for (const created of createdDirectories.reverse()) await removeEmptyTree(fileSystem, created.top, created.deepest);
    const failed = changes.find((change) => !applied.includes(change)) ?? changes[0];
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
  for (const aside of deleted.values()) await fileSystem.unlink(aside).catch(() => undefined);
}

async function rollback(
  fileSystem: FileSystem,
  applied: readonly FileChange[],
  deleted: ReadonlyMap<FileChange, string>,
  options: CommitOptions,
): Promise<{ path: string; message: string }[]> {
  const failures: { path: string; message: string }[] = [];
  for (const change of [...applied].reverse()) {
    try {
      const aside = deleted.get(change);
      if (aside) {
        await fileSystem.rename(aside, change.absolute);
      } else if (change.before === null) {
        await fileSystem.unlink(change.absolute);
      } else if (change.before !== undefined) {
        const temporary = await writeTemporary(fileSystem, change, change.before, options);
        await fileSystem.rename(temporary, change.absolute);
      }
    } catch (error) {
      failures.push({ path: change.relative, message: error instanceof Error ? error.message : String(error) });
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
