import {
  ErrorCodes,
  type ExecutionRecord,
  type RunEvent,
  type RunFilter,
  type RunStore,
  type RunSummary,
  StepwiseError,
} from '@stepwise/core';
import {
  applyEvent,
  type CancelRequest,
  checkBatch,
  checkCancelRequest,
  checkEvents,
  checkLeaseRequest,
  checkLiveOutputTail,
  emptyRun,
  executionRecord,
  FoldChanges,
  type FoldedRun,
  type Lease,
  type LiveOutputTail,
} from '@stepwise/core/store';
import type { Kysely } from 'kysely';
import type { PostgresStoreDatabase } from './database-schema.js';
import { FoldCache } from './fold-cache.js';
import { leaseFromClaim, takeClaimedLease, takeNoJournalHint } from './fresh-runs.js';
import { type FencedPart, GroupAborted, GroupCommit } from './group-commit.js';
import { readEventPage } from './journal-pages.js';
import { listRunSummaries } from './list-run-summaries.js';
import { clearLiveTails, readLiveTails, writeLiveTail } from './live-output-rows.js';
import {
  migrate,
  openConnection,
  type PostgresConnection,
  type PostgresConnectionOptions,
  storeError,
} from './postgres-connection.js';
import { type FencedBatch, type FoldedBatch, writeBatches, writeFencedBatches } from './projections.js';
import { runEndCommitted } from './run-end-listeners.js';
import {
  type AppendLock,
  acquireLease,
  checkLocked,
  type LockedForAppend,
  lockForAppends,
  releaseLease,
  renewLease,
  requestCancel,
} from './run-leases.js';
import type { Queryable } from './statements.js';

export interface PostgresStoreOptions extends PostgresConnectionOptions {
  /** Plans, arguments, outputs and model traffic of at least this many bytes of JSON are stored once in `blobs`. Default 65 536. */
  readonly blobThresholdBytes?: number;
  /** Folded runs kept in memory so appends do not re-read their journal. Default 1 000. */
  readonly foldCacheSize?: number;
}

/** A RunStore in Postgres, shared by every process that opens the same database and schema. */
export interface PostgresStore extends RunStore {
  /** Settles when migrations ran; every method waits for it. After a failure because the server was away, reading it again tries again. */
  readonly ready: Promise<void>;
  /** The Postgres schema holding the tables. */
  readonly schema: string;
  /** The connection the store uses; workers and queues share it. */
  readonly connection: PostgresConnection;
  /** Typed kysely over the store's tables, for audit queries of your own. */
  readonly db: Kysely<PostgresStoreDatabase>;
}

const READ_PAGE = 500;

class PostgresRunStore implements PostgresStore {
  #ready: Promise<void>;
  /** The last migration attempt failed for a reason that may pass (the server was away): try again on next use. */
  #migrateAgain = false;
  readonly schema: string;
  readonly connection: PostgresConnection;
  readonly #threshold: number;
  readonly #folds: FoldCache;
  readonly #group: GroupCommit<FoldedBatch, AppendLock, LockedForAppend>;
  #closed = false;

  constructor(options: PostgresStoreOptions) {
    this.connection = openConnection(options);
    this.schema = this.connection.schema;
    this.#threshold = options.blobThresholdBytes ?? 65_536;
    this.#folds = new FoldCache(options.foldCacheSize ?? 1_000);
    this.#group = new GroupCommit<FoldedBatch, AppendLock, LockedForAppend>(
      this.connection.pool,
      (client, parts) => writeBatches(client, this.schema, parts, this.#threshold),
      (client, requests) => lockForAppends(client, this.schema, requests),
      (batches) => writeFencedBatches(this.connection.pool, this.schema, batches as FencedBatch[], this.#threshold),
    );
    this.#ready = this.#migrate();
  }

  /** Reading it after a migration failed because the server was away starts another attempt. */
  get ready(): Promise<void> {
    if (this.#migrateAgain && !this.#closed) {
      this.#migrateAgain = false;
      this.#ready = this.#migrate();
    }
    return this.#ready;
  }

  #migrate(): Promise<void> {
    const attempt = migrate(this.connection).catch((error: unknown) => {
      const failure = storeError(error, `migrating schema "${this.schema}"`, this.schema);
      this.#migrateAgain = failure.retryable;
      throw failure;
    });
    // Callers that never await `ready` learn about a failed migration from their first call.
    attempt.catch(() => undefined);
    return attempt;
  }

  get db(): Kysely<PostgresStoreDatabase> {
    return this.connection.db;
  }

  async #open(): Promise<void> {
    await this.ready;
    if (this.#closed) throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'the Postgres store is closed');
  }

  async #guard<T>(what: string, location: string, body: () => Promise<T>): Promise<T> {
    await this.#open();
    try {
      return await body();
    } catch (error) {
      throw storeError(error, what, location);
    }
  }

  /** Applies the journal rows after the fold's last seq (another process may have written them). */
  async #catchUp(client: Queryable, runId: string, fold: FoldedRun, toSeq: number): Promise<void> {
    while (fold.lastSeq < toSeq) {
      const page = await readEventPage(
        client,
        this.schema,
        runId,
        fold.lastSeq,
        Math.min(READ_PAGE, toSeq - fold.lastSeq),
      );
      if (page.length === 0) return;
      for (const event of page) applyEvent(fold, event);
    }
  }

  async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    checkEvents(runId, events, { datedTimes: true });
    if (events.length === 0) return this.#open();
    const ends = events.some((event) => event.type === 'run-end');
    return this.#guard(`appending to run ${runId}`, runId, () =>
      this.#folds.use(runId, async (cached) => {
        const fold = cached ?? emptyRun(runId);
        try {
          const request = { runId, lease };
          await this.#group.run(
            (client, row) => this.#prepare(client, request, row, fold, events),
            request,
            this.#fenced(fold, events, lease),
          );
          if (ends) runEndCommitted(this.connection, runId);
          return { fold, value: undefined };
        } catch (error) {
          if (!(error instanceof GroupAborted)) throw error;
          // Another append of the group failed its write: this one committed nothing. Alone now, from
          // the journal (the cached fold took events that were rolled back).
          const fresh = emptyRun(runId);
          const request = { runId, lease };
          await this.#group.alone((client, row) => this.#prepare(client, request, row, fresh, events), request);
          if (ends) runEndCommitted(this.connection, runId);
          return { fold: fresh, value: undefined };
        }
      }),
    );
  }

  /**
   * One append's part of a group commit, once the group locked its run's row under the fence: check, catch the fold
   * up and fold the batch; the group then writes every part in one statement (at a run-end it also
   * drops the run's cancel request and live output, which last until the run ends — see
   * RunStore.requestCancel, writeLiveOutput — and marks its work-queue row done).
   */
  /**
   * The part of an append that continues the run's cached fold under a lease: it can be written by
   * one statement that fences and locks itself (no transaction round trips). Otherwise (no lease, a
   * fold that is not the run's latest, a batch that does not follow it) `undefined`: the append takes
   * the locked path, which creates the row, catches up or says why not.
   */
  #fenced(fold: FoldedRun, events: readonly RunEvent[], lease: Lease | undefined): FencedPart<FoldedBatch> | undefined {
    const first = events[0] as RunEvent;
    if (!lease || fold.lastSeq !== first.seq - 1 || (fold.lastSeq === 0 && first.type !== 'run-start'))
      return undefined;
    try {
      checkBatch(fold.runId, fold.lastSeq, events);
    } catch {
      return undefined;
    }
    return (): FencedBatch => {
      const expectedSeq = fold.lastSeq;
      const changes = new FoldChanges();
      for (const event of events) applyEvent(fold, event, changes);
      return { fold, changes, events, token: lease.token, expectedSeq };
    };
  }

  async #prepare(
    client: Queryable,
    request: AppendLock,
    locked: LockedForAppend | undefined,
    fold: FoldedRun,
    events: readonly RunEvent[],
  ): Promise<FoldedBatch> {
    const { runId } = request;
    const row = await checkLocked(client, this.schema, request, locked);
    checkBatch(runId, row.last_seq, events);
    await this.#catchUp(client, runId, fold, row.last_seq);
    const changes = new FoldChanges();
    for (const event of events) applyEvent(fold, event, changes);
    return { fold, changes, events };
  }

  async *read(runId: string, afterSeq = 0): AsyncIterable<RunEvent> {
    let after = Number.isFinite(afterSeq) ? afterSeq : 0;
    for (;;) {
      const page = await this.#guard(`reading run ${runId}`, runId, () =>
        readEventPage(this.connection.pool, this.schema, runId, after, READ_PAGE),
      );
      yield* page;
      if (page.length < READ_PAGE) return;
      after = (page[page.length - 1] as RunEvent).seq;
    }
  }

  getRun(runId: string): Promise<RunSummary | undefined> {
    // A run a worker here just claimed for the first time: see fresh-runs.ts.
    if (takeNoJournalHint(this.connection, runId)) return this.#open().then(() => undefined);
    return this.#guard(`reading run ${runId}`, runId, async () => {
      const row = await this.connection.db
        .selectFrom('runs')
        .select('summary')
        .where('id', '=', runId)
        .where('last_seq', '>', 0)
        .executeTakeFirst();
      return row?.summary ? (row.summary as RunSummary) : undefined;
    });
  }

  listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    return this.#guard('listing runs', 'runs', () => listRunSummaries(this.connection.db, filter));
  }

  getExecution(executionId: string): Promise<ExecutionRecord | undefined> {
    return this.#guard(`reading execution ${executionId}`, executionId, async () => {
      const row = await this.connection.db
        .selectFrom('executions')
        .innerJoin('runs', 'runs.id', 'executions.run_id')
        .select(['executions.run_id', 'runs.last_seq'])
        .where('execution_id', '=', executionId)
        .executeTakeFirst();
      if (!row) return undefined;
      // The journal is the source of truth: the record is core's fold of it, as in every store.
      return this.#folds.use(row.run_id, async (cached) => {
        const fold = cached ?? emptyRun(row.run_id);
        await this.#catchUp(this.connection.pool, row.run_id, fold, row.last_seq);
        return { fold, value: executionRecord(fold, executionId) };
      });
    });
  }

  async acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    checkLeaseRequest(runId, owner, ttlMs);
    // A run a worker here just claimed for the first time holds its lease already (fresh-runs.ts);
    // asked too late or with another TTL, it is taken again under the claim's owner.
    const claimed = takeClaimedLease(this.connection, runId);
    const fromClaim = claimed && leaseFromClaim(runId, owner, ttlMs, claimed);
    if (fromClaim) return this.#open().then(() => fromClaim);
    return this.#guard(`leasing run ${runId}`, runId, async () => {
      // In the next group commit: a worker starting several runs takes their leases in one commit.
      let lease: Lease | undefined;
      await this.#inGroup(async (client) => {
        lease = await acquireLease(client, this.schema, runId, claimed?.owner ?? owner, ttlMs);
      });
      return lease && { ...lease, owner };
    });
  }

  async renewLease(lease: Lease): Promise<Lease> {
    checkLeaseRequest(lease?.runId, lease?.owner, lease?.ttlMs);
    return this.#guard(`renewing the lease on run ${lease.runId}`, lease.runId, () =>
      renewLease(this.connection, lease),
    );
  }

  async requestCancel(runId: string, request: CancelRequest): Promise<boolean> {
    checkCancelRequest(runId, request);
    return this.#guard(`recording a cancel request for run ${runId}`, runId, () =>
      requestCancel(this.connection, runId, request),
    );
  }

  async writeLiveOutput(tail: LiveOutputTail): Promise<void> {
    checkLiveOutputTail(tail);
    const what = `publishing live output of run ${tail.runId}`;
    await this.#guard(what, tail.runId, () => writeLiveTail(this.connection, tail));
  }

  async readLiveOutput(runId: string): Promise<LiveOutputTail[]> {
    return this.#guard(`reading live output of run ${runId}`, runId, () => readLiveTails(this.connection, runId));
  }

  async clearLiveOutput(runId: string, executionId: string): Promise<void> {
    const what = `clearing live output of run ${runId}`;
    await this.#guard(what, runId, () => clearLiveTails(this.connection, runId, executionId));
  }

  async releaseLease(lease: Lease): Promise<void> {
    // A closed store cannot release; the lease then simply expires (as in MemoryStore, no error).
    if (this.#closed) return;
    await this.#guard(`releasing the lease on run ${lease.runId}`, lease.runId, () =>
      this.#inGroup((client) => releaseLease(client, this.schema, lease)),
    );
  }

  /**
   * A lease statement in the next group commit (it shares the appends' commit), or on its own when
   * the group's write failed (it rolled back with it).
   */
  async #inGroup(work: (client: Queryable) => Promise<void>): Promise<void> {
    const part = async (client: Queryable) => {
      await work(client);
      return undefined;
    };
    try {
      await this.#group.run(part);
    } catch (error) {
      if (!(error instanceof GroupAborted)) throw error;
      await this.#group.alone(part);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.ready.catch(() => undefined);
    this.#folds.clear();
    await this.connection.close();
  }
}

/**
 * Opens a Stepwise store in Postgres, creating its schema and tables on first use (migrations run
 * once, whichever process gets there first). Pass a connection string or the host's `pg.Pool`.
 */
export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  return new PostgresRunStore(options);
}
