import {
  type ErrorCode,
  ErrorCodes,
  type ExecutionRecord,
  type RunEvent,
  type RunFilter,
  type RunStore,
  type RunSummary,
  StepwiseError,
} from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import {
  type CancelRequest,
  checkCancelRequest,
  checkEvents,
  checkLease,
  checkLeaseRequest,
  checkLiveOutputTail,
  type Lease,
  type LiveOutputTail,
} from '@stepwise/core/store';
import type Database from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { BlobWriter } from './blob-codec.js';
import {
  type CancelRequestStatements,
  prepareCancelRequestStatements,
  recordRequest,
  withCancelRequest,
} from './cancel-requests.js';
import type { StoreDatabase } from './database-schema.js';
import { chunkBytesOf } from './event-chunks.js';
import { JournalReader } from './journal-reader.js';
import { JournalWriter } from './journal-writer.js';
import {
  clearTails,
  type LiveOutputStatements,
  prepareLiveOutputStatements,
  readTails,
  writeTail,
} from './live-output-rows.js';
import { openDatabase, unavailable } from './open-database.js';
import { heldLease, type LeaseColumns, type LeaseStatements, prepareLeaseStatements, takeLease } from './run-leases.js';
import { MIGRATION_TABLE, SCHEMA_VERSION } from './schema-version.js';
import type * as QueryHelpers from './sqlite-queries.js';
import { inlineBytesOf, outputInlineBytesOf, resolveOptions, type SqliteStoreOptions } from './sqlite-store-options.js';
import type { StepRecord } from './step-record.js';

/** kysely over the store's connection, and the query helpers written with it. */
interface Queries {
  readonly db: Kysely<StoreDatabase>;
  readonly helpers: typeof QueryHelpers;
}

/**
 * Loaded on first use (migrations, `listRuns`, `listSteps`, `listExecutions`), the helpers' module
 * with kysely, which it imports: the append and read paths run on prepared statements, and a process
 * that imports the store and only appends never loads kysely (about a tenth of a second).
 */
async function openQueries(sqlite: Database.Database): Promise<Queries> {
  const [{ Kysely, SqliteDialect }, helpers] = await Promise.all([import('kysely'), import('./sqlite-queries.js')]);
  return { db: new Kysely<StoreDatabase>({ dialect: new SqliteDialect({ database: sqlite }) }), helpers };
}

/** A RunStore in one SQLite file, plus the read helpers the CLI uses. */
export interface SqliteStore extends RunStore {
  /** Absolute path of the database file (`:memory:` for an in-memory store): open it with any SQLite tool. */
  readonly path: string;
  /** Settles when migrations ran; every method waits for it, so awaiting it is only needed to surface errors early. */
  readonly ready: Promise<void>;
  /** Events after `afterSeq` (default 0), at most `limit` (default all): for tailing a run. */
  readEvents(runId: string, afterSeq?: number, limit?: number): Promise<RunEvent[]>;
  /** The run's steps in the order the fold met them (plan order first). */
  listSteps(runId: string): Promise<StepRecord[]>;
  /** Audit bundles of the run's executions (of one step when `stepId` is given), oldest first. */
  listExecutions(runId: string, stepId?: string): Promise<ExecutionRecord[]>;
}

const READ_PAGE = 500;

class SqliteRunStore implements SqliteStore {
  readonly path: string;
  readonly ready: Promise<void>;
  readonly #sqlite: Database.Database;
  #kysely: Promise<Queries> | undefined;
  /** Inline limits: values in general, tool outputs; and the size of an output's pieces (see event-chunks). */
  readonly #thresholds: readonly [number, number, number];
  readonly #foldCacheSize: number;
  #writer: JournalWriter | undefined;
  #reader: JournalReader | undefined;
  #appendBatch: Database.Transaction<(runId: string, events: readonly RunEvent[], lease?: Lease) => void> | undefined;
  #leaseStatements: LeaseStatements | undefined;
  #cancelStatements: CancelRequestStatements | undefined;
  #liveStatements: LiveOutputStatements | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: SqliteStoreOptions) {
    const resolved = resolveOptions(options);
    const opened = openDatabase(resolved);
    this.path = opened.path;
    this.#sqlite = opened.sqlite;
    const pageSize = opened.sqlite.pragma('page_size', { simple: true }) as number;
    this.#thresholds = [
      resolved.artifactThresholdBytes ?? inlineBytesOf(pageSize),
      resolved.artifactThresholdBytes ?? outputInlineBytesOf(pageSize),
      chunkBytesOf(pageSize),
    ];
    this.#foldCacheSize = resolved.foldCacheSize;
    if (opened.pendingMigrations) {
      this.ready = this.#migrate().then(() => this.#prepare());
    } else {
      this.#prepare();
      this.ready = Promise.resolve();
    }
    // Callers that never await `ready` learn about a failed migration from their first call.
    this.ready.catch(() => undefined);
  }

  async #migrate(): Promise<void> {
    // kysely runs SQLite migrations outside a transaction; one IMMEDIATE transaction around the
    // Migrator makes them all-or-nothing and lets only one process migrate at a time.
    try {
      const [{ Migrator }, { migrationProvider }, { db }] = await Promise.all([
        import('kysely'),
        import('./migrations.js'),
        this.#queries(),
      ]);
      this.#sqlite.exec('begin immediate');
      const migrator = new Migrator({ db, provider: migrationProvider, migrationTableName: MIGRATION_TABLE });
      const { error } = await migrator.migrateToLatest();
      if (error) throw error;
      this.#sqlite.exec('commit');
    } catch (error) {
      if (this.#sqlite.inTransaction) this.#sqlite.exec('rollback');
      this.#closed = true;
      this.#sqlite.close();
      const busy = String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY');
      throw unavailable(this.path, `migrating the schema failed (${(error as Error).message})`, error, busy);
    }
  }

  #queries(): Promise<Queries> {
    this.#kysely ??= openQueries(this.#sqlite);
    return this.#kysely;
  }

  #prepare(): void {
    try {
      this.#prepareStatements();
    } catch (error) {
      // Only a file whose tables differ from what its recorded version promises gets here (a
      // pre-release build of this package wrote it, or a tool changed it): refuse it, untouched.
      this.#closed = true;
      this.#sqlite.close();
      throw unavailable(
        this.path,
        `its tables do not match schema version ${SCHEMA_VERSION} (${(error as Error).message}); it was written by a pre-release build or changed by hand`,
        error,
      );
    }
  }

  #prepareStatements(): void {
    const reader = new JournalReader(this.#sqlite, this.path);
    const read = (runId: string, afterSeq: number, limit: number) => reader.page(runId, afterSeq, limit);
    const writer = new JournalWriter(
      this.#sqlite,
      new BlobWriter(this.#sqlite, ...this.#thresholds),
      read,
      this.#foldCacheSize,
    );
    this.#reader = reader;
    this.#writer = writer;
    this.#leaseStatements = prepareLeaseStatements(this.#sqlite);
    this.#cancelStatements = prepareCancelRequestStatements(this.#sqlite);
    this.#liveStatements = prepareLiveOutputStatements(this.#sqlite);
    this.#appendBatch = this.#sqlite.transaction((runId: string, events: readonly RunEvent[], lease?: Lease) =>
      writer.append(runId, events, lease, Date.now()),
    );
  }

  async #open(): Promise<JournalReader> {
    await this.ready;
    if (this.#closed || !this.#reader) throw unavailable(this.path, 'the store is closed');
    return this.#reader;
  }

  /** SQLite failures become E503 (retryable when another process held the lock too long). */
  #translate(error: unknown, what: string, fallbackCode: ErrorCode = ErrorCodes.STORE_UNAVAILABLE): StepwiseError {
    if (StepwiseError.isInstance(error)) return error;
    const code = String((error as { code?: unknown }).code ?? '');
    const message = messageOf(error);
    if (code.startsWith('SQLITE_') || fallbackCode === ErrorCodes.STORE_UNAVAILABLE) {
      return unavailable(this.path, `${what} failed (${message})`, error, code.startsWith('SQLITE_BUSY'));
    }
    return new StepwiseError(fallbackCode, `${what}: ${message}`, { location: this.path, cause: error });
  }

  async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    // Once the statements are prepared, an append does not wait for a turn of the event loop.
    if (this.#closed || !this.#appendBatch) await this.#open();
    checkEvents(runId, events);
    if (events.length === 0) return;
    try {
      this.#appendBatch?.immediate(runId, events, lease);
    } catch (error) {
      // The batch may have reached the fold and failed at commit.
      this.#writer?.forget(runId);
      throw this.#translate(error, `appending to run ${runId}`, ErrorCodes.INPUT_INVALID);
    }
  }

  async *read(runId: string, afterSeq = 0): AsyncIterable<RunEvent> {
    let after = Number.isFinite(afterSeq) ? afterSeq : 0;
    for (;;) {
      const reader = await this.#open();
      let page: RunEvent[];
      try {
        page = reader.page(runId, after, READ_PAGE);
      } catch (error) {
        throw this.#translate(error, `reading run ${runId}`);
      }
      yield* page;
      if (page.length < READ_PAGE) return;
      after = (page[page.length - 1] as RunEvent).seq;
    }
  }

  async readEvents(runId: string, afterSeq = 0, limit = Number.POSITIVE_INFINITY): Promise<RunEvent[]> {
    const reader = await this.#open();
    const events: RunEvent[] = [];
    let after = Number.isFinite(afterSeq) ? afterSeq : 0;
    try {
      while (events.length < limit) {
        const page = reader.page(runId, after, Math.min(READ_PAGE, limit - events.length));
        events.push(...page);
        if (page.length === 0) break;
        after = (page[page.length - 1] as RunEvent).seq;
      }
    } catch (error) {
      throw this.#translate(error, `reading run ${runId}`);
    }
    return events;
  }

  getRun(runId: string): Promise<RunSummary | undefined> {
    return this.#guarded(`reading run ${runId}`, (reader) => reader.summary(runId));
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    const reader = await this.#open();
    const statuses = filter.status === undefined ? undefined : [filter.status].flat();
    if (statuses?.length === 0) return [];
    try {
      const { db, helpers } = await this.#queries();
      const rows = await helpers.selectRuns(db, filter, statuses);
      return rows.map((row) => reader.summarize(row));
    } catch (error) {
      throw this.#translate(error, 'listing runs');
    }
  }

  getExecution(executionId: string): Promise<ExecutionRecord | undefined> {
    return this.#guarded(`reading execution ${executionId}`, (reader) => reader.execution(executionId));
  }

  listSteps(runId: string): Promise<StepRecord[]> {
    return this.#guarded(`listing the steps of run ${runId}`, async (reader) => {
      const { db, helpers } = await this.#queries();
      const rows = await helpers.selectSteps(db, runId);
      return rows.map((row) => reader.step(runId, row));
    });
  }

  listExecutions(runId: string, stepId?: string): Promise<ExecutionRecord[]> {
    return this.#guarded(`listing the executions of run ${runId}`, async (reader) => {
      const { db, helpers } = await this.#queries();
      const ids = await helpers.selectExecutionIds(db, runId, stepId);
      return ids
        .map((executionId) => reader.execution(executionId))
        .filter((record): record is ExecutionRecord => record !== undefined);
    });
  }

  async acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    await this.#open();
    checkLeaseRequest(runId, owner, ttlMs);
    try {
      const take = () => takeLease(this.#leaseStatements as LeaseStatements, runId, owner, ttlMs, Date.now());
      const cancels = this.#cancelStatements as CancelRequestStatements;
      return this.#sqlite.transaction(() => withCancelRequest(cancels, take())).immediate();
    } catch (error) {
      throw this.#translate(error, `leasing run ${runId}`);
    }
  }

  async renewLease(lease: Lease): Promise<Lease> {
    await this.#open();
    checkLeaseRequest(lease?.runId, lease?.owner, lease?.ttlMs);
    try {
      return this.#sqlite
        .transaction(() => {
          const now = Date.now();
          // Core's rule: only the current token may renew (expiry alone does not void a lease nobody took).
          checkLease(lease.runId, heldLease(lease.runId, this.#leaseRow(lease.runId)), lease, now);
          const renewed: Lease = { ...lease, expiresAt: new Date(now + lease.ttlMs).toISOString() };
          this.#leaseStatements?.renew.run(renewed.expiresAt, lease.runId, lease.token);
          return withCancelRequest(this.#cancelStatements as CancelRequestStatements, renewed);
        })
        .immediate();
    } catch (error) {
      throw this.#translate(error, `renewing the lease on run ${lease.runId}`);
    }
  }

  async requestCancel(runId: string, request: CancelRequest): Promise<boolean> {
    checkCancelRequest(runId, request);
    const statements = () => this.#cancelStatements as CancelRequestStatements;
    return this.#guarded(`recording a cancel request for run ${runId}`, () =>
      recordRequest(statements(), runId, request),
    );
  }

  async writeLiveOutput(tail: LiveOutputTail): Promise<void> {
    checkLiveOutputTail(tail);
    // One statement of its own, outside any journal transaction: WAL lets appends go on meanwhile.
    await this.#guarded(`publishing live output of run ${tail.runId}`, () => writeTail(this.#live(), tail));
  }

  readLiveOutput(runId: string): Promise<LiveOutputTail[]> {
    return this.#guarded(`reading live output of run ${runId}`, () => readTails(this.#live(), runId));
  }

  async clearLiveOutput(runId: string, executionId: string): Promise<void> {
    await this.#guarded(`clearing live output of run ${runId}`, () => clearTails(this.#live(), runId, executionId));
  }

  /** Runs `body` on the open store; a failure becomes E503 naming `what` (see `#translate`). */
  async #guarded<T>(what: string, body: (reader: JournalReader) => T | Promise<T>): Promise<T> {
    const reader = await this.#open();
    try {
      return await body(reader);
    } catch (error) {
      throw this.#translate(error, what);
    }
  }

  #live(): LiveOutputStatements {
    return this.#liveStatements as LiveOutputStatements;
  }

  async releaseLease(lease: Lease): Promise<void> {
    // A closed store cannot release; the lease then simply expires (as in MemoryStore, no error).
    if (this.#closed) return;
    await this.#guarded(`releasing the lease on run ${lease.runId}`, () => {
      this.#leaseStatements?.release.run(lease.runId, lease.token);
    });
  }

  #leaseRow(runId: string): LeaseColumns | undefined {
    return this.#leaseStatements?.select.get(runId);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.ready.catch(() => undefined);
      this.#closed = true;
      if (this.#kysely) await (await this.#kysely).db.destroy().catch(() => undefined);
      // kysely only closes a database it has used; the hot path never goes through it.
      if (this.#sqlite.open) this.#sqlite.close();
    })();
    return this.#closing;
  }
}

/**
 * Opens (creating and migrating when needed) a Stepwise SQLite store. Synchronously throws E503 when
 * the file cannot be used (not SQLite, corrupt, read-only) and E504 when a newer version wrote it;
 * nothing is written to the file in either case.
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return new SqliteRunStore(options);
}
