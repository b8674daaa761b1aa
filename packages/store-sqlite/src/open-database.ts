import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { JOURNAL_VERSION } from '@stepwise/core/store';
import Database from 'better-sqlite3';
import { MIGRATION_NAMES, MIGRATION_TABLE, SCHEMA_VERSION } from './schema-version.js';

const SQLITE_HEADER = 'SQLite format 3\u0000';

export interface OpenedDatabase {
  readonly sqlite: Database.Database;
  /** Absolute path, or `:memory:`. */
  readonly path: string;
  /** Whether some migration of this code has not run on the file yet. */
  readonly pendingMigrations: boolean;
}

export interface OpenDatabaseOptions {
  readonly path: string;
  readonly synchronous: 'NORMAL' | 'FULL';
  readonly busyTimeoutMs: number;
  readonly checkpointPages: number;
  readonly createDirectory: boolean;
}

export function unavailable(path: string, message: string, cause?: unknown, retryable = false): StepwiseError {
  return new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, `SQLite store ${path}: ${message}`, {
    location: path,
    retryable,
    ...(cause === undefined ? {} : { cause }),
  });
}

const isMemory = (path: string) => path === ':memory:' || path === '';

/**
 * Refuses anything that is not a SQLite database before SQLite touches it: SQLite would
 * otherwise create journal files beside a foreign file before noticing.
 */
function checkExistingFile(path: string): void {
  let size: number;
  try {
    const stat = statSync(path);
    if (stat.isDirectory()) throw unavailable(path, 'the path is a directory, not a database file');
    size = stat.size;
  } catch (error) {
    if (StepwiseError.isInstance(error)) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw unavailable(path, `cannot read the file (${(error as Error).message})`, error);
  }
  if (size === 0) return;
  const header = Buffer.alloc(SQLITE_HEADER.length);
  let read = 0;
  try {
    const descriptor = openSync(path, 'r');
    try {
      read = readSync(descriptor, header, 0, header.length, 0);
    } finally {
      closeSync(descriptor);
    }
  } catch (error) {
    throw unavailable(path, `cannot read the file (${(error as Error).message})`, error);
  }
  if (read < header.length || header.toString('latin1') !== SQLITE_HEADER) {
    throw unavailable(
      path,
      'the file is not a SQLite database (corrupt, or another kind of file); it was not modified',
    );
  }
}

/** A hint when SQLite could not create a new file: its directory is not writable. */
function whyNotCreated(path: string): string {
  if (isMemory(path) || existsSync(path)) return '';
  try {
    accessSync(dirname(path), constants.W_OK);
    return '';
  } catch {
    return `; the directory ${dirname(path)} is read-only`;
  }
}

/** Reads, never writes: which migrations the file has, and whether it is newer than this code. */
function readSchemaState(sqlite: Database.Database, path: string): { pending: boolean } {
  const userVersion = sqlite.pragma('user_version', { simple: true }) as number;
  const hasTable = sqlite
    .prepare("select 1 from sqlite_master where type = 'table' and name = ?")
    .pluck()
    .get(MIGRATION_TABLE);
  const applied = hasTable
    ? (sqlite.prepare(`select name from ${MIGRATION_TABLE} order by name`).pluck().all() as string[])
    : [];
  const unknown = applied.filter((name) => !MIGRATION_NAMES.includes(name));
  if (unknown.length > 0 || userVersion > SCHEMA_VERSION) {
    throw new StepwiseError(
      ErrorCodes.STORE_SCHEMA_NEWER,
      `SQLite store ${path} was written by a newer @stepwise/store-sqlite (schema version ${Math.max(userVersion, applied.length)}${
        unknown.length > 0 ? `, migrations ${unknown.join(', ')}` : ''
      }; this version knows ${SCHEMA_VERSION}); upgrade the package; the database was not modified`,
      { location: path, details: { userVersion, unknownMigrations: unknown, supportedVersion: SCHEMA_VERSION } },
    );
  }
  checkJournalFormat(sqlite, path);
  return { pending: MIGRATION_NAMES.some((name) => !applied.includes(name)) };
}

/** Refuses (E504) a file whose journals are in a format newer than this release's core folds. */
function checkJournalFormat(sqlite: Database.Database, path: string): void {
  const hasTable = sqlite.prepare("select 1 from sqlite_master where type = 'table' and name = 'store_metadata'").get();
  if (!hasTable) return;
  const version = sqlite.prepare("select value from store_metadata where name = 'journal_version'").pluck().get();
  if (version === undefined || (typeof version === 'number' && version <= JOURNAL_VERSION)) return;
  throw new StepwiseError(
    ErrorCodes.STORE_SCHEMA_NEWER,
    `SQLite store ${path} holds journals in format version ${String(version)}, newer than this release reads (${JOURNAL_VERSION}); upgrade @stepwise/core and @stepwise/store-sqlite; the database was not modified`,
    { location: path, details: { journalVersion: version, supportedJournalVersion: JOURNAL_VERSION } },
  );
}

/**
 * Proves the file and its directory are writable now rather than at the first append. Another
 * process holding the write lock proves it too: that is not a reason to refuse the file.
 */
function probeWritable(sqlite: Database.Database): void {
  try {
    sqlite.exec('begin immediate');
    sqlite.exec('rollback');
  } catch (error) {
    if (!String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY')) throw error;
  }
}

/**
 * Opens (or creates) the database synchronously and checks it: E503 when it cannot be opened,
 * is not SQLite, is corrupt or is read-only; E504 when a newer schema wrote it. Nothing is
 * written before every check passed.
 */
export function openDatabase(options: OpenDatabaseOptions): OpenedDatabase {
  const path = isMemory(options.path) ? ':memory:' : resolve(options.path);
  if (!isMemory(path)) {
    checkExistingFile(path);
    if (options.createDirectory) {
      try {
        mkdirSync(dirname(path), { recursive: true });
      } catch (error) {
        throw unavailable(path, `cannot create its directory (${(error as Error).message})`, error);
      }
    }
  }
  let sqlite: Database.Database;
  try {
    sqlite = new Database(path, { timeout: options.busyTimeoutMs });
  } catch (error) {
    throw unavailable(path, `cannot open the database (${(error as Error).message}${whyNotCreated(path)})`, error);
  }
  try {
    const { pending } = readSchemaState(sqlite, path);
    if (!isMemory(path)) {
      const mode = sqlite.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal') throw unavailable(path, `cannot switch to WAL mode (journal mode stays ${String(mode)})`);
    }
    sqlite.pragma(`synchronous = ${options.synchronous}`);
    sqlite.pragma(`wal_autocheckpoint = ${options.checkpointPages}`);
    sqlite.pragma('foreign_keys = ON');
    probeWritable(sqlite);
    return { sqlite, path, pendingMigrations: pending };
  } catch (error) {
    try {
      sqlite.close();
    } catch {
      // Closing a connection that failed to open cannot make matters worse.
    }
    if (StepwiseError.isInstance(error)) throw error;
    const code = (error as { code?: string }).code ?? '';
    throw unavailable(
      path,
      code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN')
        ? `the database or its directory is read-only (${(error as Error).message})`
        : `cannot use the database (${(error as Error).message})`,
      error,
      code.startsWith('SQLITE_BUSY'),
    );
  }
}
