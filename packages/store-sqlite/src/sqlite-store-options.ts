import { ErrorCodes, StepwiseError } from '@stepwise/core';

/** Options of `createSqliteStore`. */
export interface SqliteStoreOptions {
  /**
   * The database file. Created (with its directory) when missing. `':memory:'` gives a private
   * in-memory database: fine for tests, gone on close. The CLI's default is `.stepwise/stepwise.db`.
   */
  readonly path: string;
  /**
   * `NORMAL` (default): in WAL mode an acknowledged append survives a crash of the process; a power
   * loss or OS crash may lose the last transactions, never corrupt the file. `FULL`: every append is
   * synced to disk before it is acknowledged, at the cost of one fsync per batch.
   */
  readonly synchronous?: 'NORMAL' | 'FULL';
  /** How long a write waits for another process's transaction before failing with a retryable E503. Default 5000 ms. */
  readonly busyTimeoutMs?: number;
  /**
   * Outputs, artifact contents, arguments, plans and model requests/responses whose text is
   * larger than this many UTF-8 bytes are stored once in `blobs`, keyed by their SHA-256, and
   * referenced from every row that holds them. Default: derived from the file's page size so
   * that rows fit their page instead of spilling into mostly empty overflow pages: 3,549 bytes for
   * tool outputs (held inline by their tool-result event only) and 334 for the rest (at the
   * default 4 KB page; see `inlineBytesOf`). A value set here applies to both.
   */
  readonly artifactThresholdBytes?: number;
  /**
   * SQLite copies the WAL back into the database file (a checkpoint, which syncs both files) once
   * the WAL holds this many pages. Default 10000 (about 40 MB of WAL at the 4 KB page size):
   * every step commits a few pages, and each checkpoint rewrites every page changed since the
   * last one, so a rarer checkpoint writes the hot pages (the journal's last leaf, the step and
   * execution pages a run's steps share) less often. SQLite's own default is 1000.
   */
  readonly checkpointPages?: number;
  /** Create the database's directory when it is missing. Default true. */
  readonly createDirectory?: boolean;
  /**
   * Running runs whose fold (core's state of the run, which the projections are written from) is
   * kept in memory between appends, so an append applies only its own events. A run not kept is
   * folded from its journal at its next append. Default 1000; 0 keeps none.
   */
  readonly foldCacheSize?: number;
}

export interface ResolvedSqliteStoreOptions {
  readonly path: string;
  readonly synchronous: 'NORMAL' | 'FULL';
  readonly busyTimeoutMs: number;
  /** `undefined`: derived from the file's page size (see `inlineBytesOf`). */
  readonly artifactThresholdBytes: number | undefined;
  readonly checkpointPages: number;
  readonly createDirectory: boolean;
  readonly foldCacheSize: number;
}

/**
 * The default inline limit for a file of `pageSize` bytes: a third of the largest payload SQLite
 * keeps on a `WITHOUT ROWID` (index b-tree) leaf before spilling to overflow pages, which is
 * `(usable − 12) · 64 / 255 − 23` bytes (1,002 at 4 KB). An output inline is held by its
 * tool-result event and its execution's row; one over the limit is held once, in `blobs`.
 */
export function inlineBytesOf(pageSize: number): number {
  return Math.floor((Math.floor(((pageSize - 12) * 64) / 255) - 23) / 3);
}

/**
 * The default inline limit for a tool's output: only its tool-result event holds it inline (the
 * step-end and the execution's and step's rows refer to it), in the journal's rowid table, whose
 * leaf keeps a row of up to `usable − 35` bytes whole; 512 of those are left for the event's other
 * fields (3,549 bytes at 4 KB).
 */
export function outputInlineBytesOf(pageSize: number): number {
  return pageSize - 35 - 512;
}

function invalid(option: string, message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.CONFIG_INVALID, `createSqliteStore: ${option} ${message}`, {
    location: option,
  });
}

function count(value: unknown, option: string, fallback: number, minimum: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) {
    throw invalid(option, `must be an integer ≥ ${minimum}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Checks the options (E601 on bad ones) and fills in the defaults. */
export function resolveOptions(options: SqliteStoreOptions): ResolvedSqliteStoreOptions {
  if (typeof options !== 'object' || options === null) throw invalid('options', 'must be an object with a path');
  if (typeof options.path !== 'string') throw invalid('path', 'must be a file path or ":memory:"');
  const synchronous = options.synchronous === undefined ? 'NORMAL' : String(options.synchronous).toUpperCase();
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
    throw invalid('synchronous', `must be "NORMAL" or "FULL", got ${JSON.stringify(options.synchronous)}`);
  }
  if (options.createDirectory !== undefined && typeof options.createDirectory !== 'boolean') {
    throw invalid('createDirectory', 'must be a boolean');
  }
  return {
    path: options.path,
    synchronous,
    busyTimeoutMs: count(options.busyTimeoutMs, 'busyTimeoutMs', 5000, 0),
    artifactThresholdBytes:
      options.artifactThresholdBytes === undefined
        ? undefined
        : count(options.artifactThresholdBytes, 'artifactThresholdBytes', 0, 1),
    checkpointPages: count(options.checkpointPages, 'checkpointPages', 10_000, 1),
    createDirectory: options.createDirectory ?? true,
    foldCacheSize: count(options.foldCacheSize, 'foldCacheSize', 1000, 0),
  };
}
