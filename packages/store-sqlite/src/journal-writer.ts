import { ErrorCodes, type RunEvent, StepwiseError } from '@stepwise/core';
import { applyEvent, checkBatch, checkLease, FoldChanges, type FoldedRun, type Lease } from '@stepwise/core/store';
import type Database from 'better-sqlite3';
import { BatchCalls } from './batch-calls.js';
import { type BlobWriter, encodeEvent } from './blob-codec.js';
import { CHAIN_BYTES } from './chain-column.js';
import { typeCodeOf } from './event-types.js';
import { MAX_OUTPUT_DISTANCE } from './payload-packing.js';
import { ProjectionWriter, runFields } from './projection-writer.js';
import { type ReadEvents, RunFolds } from './run-folds.js';
import { heldLease, type LeaseColumns } from './run-leases.js';
import { encodeTime } from './time-codec.js';
import { lastSeqOf, RUN_KEY_SHIFT } from './view-sql.js';

/** Rows per insert statement: a batch of more events takes several. */
const EVENTS_PER_INSERT = 16;
/** The values an event's row binds (see `#insertEventsOf`). */
const COLUMNS_PER_EVENT = 8;

interface RunRow extends LeaseColumns {
  readonly key: number;
  readonly last_seq: number;
}

/**
 * Appends batches: the seq and lease checks, the journal rows, and the projections. Each event is
 * applied to core's fold of the run (`applyEvent`, the one definition of what an event means),
 * which says which steps and executions changed; each changed row is then written once per batch,
 * from the fold's state. Runs inside the caller's transaction, synchronously, on prepared statements.
 */
export class JournalWriter {
  readonly #blobs: BlobWriter;
  readonly #folds: RunFolds;
  readonly #projections: ProjectionWriter;
  readonly #selectRun: Database.Statement<[string], RunRow>;
  readonly #insertRun: Database.Statement<[string]>;
  readonly #forgetCancelRequest: Database.Statement<[number]>;
  readonly #forgetLiveOutput: Database.Statement<[number]>;
  readonly #sqlite: Database.Database;
  /** `#insertEvents[n]` inserts n events in one statement (prepared on first use, up to EVENTS_PER_INSERT). */
  readonly #insertEvents: Database.Statement[] = [];
  /**
   * One chain value's bytes per row of an insert, reused batch after batch: better-sqlite3 copies a
   * bound buffer (SQLITE_TRANSIENT), and a new 17-byte Buffer for every event cost about 100 bytes
   * and 40 ns of the append.
   */
  readonly #chainSlots = Array.from({ length: EVENTS_PER_INSERT }, () => Buffer.alloc(CHAIN_BYTES));
  /** `#eventValues[n]`: the bound values of an insert of n events, reused batch after batch. */
  readonly #eventValues: (string | number | bigint | Buffer | null)[][] = [];
  /** Filled by each batch's events, cleared before the next (see FoldChanges.clear). */
  readonly #changes = new FoldChanges();

  constructor(sqlite: Database.Database, blobs: BlobWriter, read: ReadEvents, foldCacheSize: number) {
    this.#blobs = blobs;
    this.#folds = new RunFolds(foldCacheSize, read);
    this.#projections = new ProjectionWriter(sqlite, blobs);
    this.#selectRun = sqlite.prepare(
      `select key, ${lastSeqOf('r')} as last_seq, lease_owner, lease_token, lease_ttl_ms, lease_expires_at
       from runs r where id = ?`,
    );
    this.#insertRun = sqlite.prepare('insert into runs (id) values (?)');
    this.#forgetCancelRequest = sqlite.prepare('delete from cancel_requests where run_key = ?');
    this.#forgetLiveOutput = sqlite.prepare('delete from live_output where run_key = ?');
    this.#sqlite = sqlite;
  }

  /** The whole batch; call inside one IMMEDIATE transaction. Throws E502/E501 before writing. */
  append(runId: string, events: readonly RunEvent[], lease: Lease | undefined, now: number): void {
    this.#blobs.reset();
    const row = this.#selectRun.get(runId);
    const lastSeq = row?.last_seq ?? 0;
    // Lease first, as every store: a fenced-off writer learns it lost the run (E501), whatever its seq.
    checkLease(runId, heldLease(runId, row), lease, now);
    checkBatch(runId, lastSeq, events);
    checkSeqRange(runId, events);
    const runKey = row ? row.key : Number(this.#insertRun.run(runId).lastInsertRowid);
    const fold = this.#folds.take(runId, lastSeq, events);
    const before = runFields(fold);
    const changes = this.#changes;
    changes.clear();
    this.#insertEventRows(runId, runKey, events, fold);
    let ended = false;
    for (const event of events) {
      applyEvent(fold, event, changes);
      if (event.type === 'run-end') ended = true;
    }
    // A cancel request and live output last until the run ends (see RunStore.requestCancel, writeLiveOutput).
    if (ended) {
      this.#forgetCancelRequest.run(runKey);
      this.#forgetLiveOutput.run(runKey);
    }
    this.#projections.write(runKey, fold, before, changes, events);
    this.#folds.keep(fold, changes);
  }

  /** The batch's journal rows, up to EVENTS_PER_INSERT rows per statement (a step's four events: one). */
  #insertEventRows(runId: string, runKey: number, events: readonly RunEvent[], fold: FoldedRun): void {
    const calls = new BatchCalls(events);
    for (let from = 0; from < events.length; from += EVENTS_PER_INSERT) {
      const count = Math.min(EVENTS_PER_INSERT, events.length - from);
      // Filled by index: an array emptied and pushed again would grow a new backing store each batch.
      const values = this.#valuesOf(count);
      let at = 0;
      for (let index = from; index < from + count; index++) {
        const event = events[index] as RunEvent;
        const attempt = attemptOf(events, index, fold, calls);
        calls.pass(index);
        const chainSlot = this.#chainSlots[index - from];
        const distance = this.#outputDistance(events, index);
        const encoded = encodeEvent(runId, event, this.#blobs, runKey, distance, attempt, chainSlot);
        values[at++] = runKey;
        values[at++] = event.seq;
        values[at++] = typeCodeOf(event.type);
        values[at++] = encodeTime(event.at);
        values[at++] = encoded.payload;
        values[at++] = encoded.blobRefs;
        values[at++] = encoded.packing;
        values[at++] = encoded.chain;
      }
      this.#insertEventsOf(count).run(values);
    }
  }

  #valuesOf(count: number): (string | number | bigint | Buffer | null)[] {
    let values = this.#eventValues[count];
    if (!values) {
      values = new Array(count * COLUMNS_PER_EVENT).fill(null);
      this.#eventValues[count] = values;
    }
    return values;
  }

  /**
   * For a step-end (`events[index]`) whose output equals its tool-result's earlier in the batch: how
   * many seqs back that tool-result is (the step-end then leaves its output out: journaled once).
   * Else 0. The batch's seqs follow one another (checkBatch), so the tool-result is among the
   * MAX_OUTPUT_DISTANCE events before: the nearest with an output for the step's execution.
   */
  #outputDistance(events: readonly RunEvent[], index: number): number {
    const event = events[index] as RunEvent;
    if (event.type !== 'step-end') return 0;
    const result = event.result as { executionId?: unknown; output?: unknown } | undefined;
    if (typeof result?.executionId !== 'string') return 0;
    for (let back = index - 1; back >= 0 && back >= index - MAX_OUTPUT_DISTANCE; back--) {
      const toolResult = events[back] as RunEvent;
      if (toolResult.type !== 'tool-result' || toolResult.output === undefined) continue;
      if (toolResult.executionId !== result.executionId) continue;
      const blobs = this.#blobs;
      const same =
        toolResult.output === result.output || blobs.textOf(toolResult.output) === blobs.textOf(result.output);
      return same ? event.seq - toolResult.seq : 0;
    }
    return 0;
  }

  #insertEventsOf(count: number): Database.Statement {
    let statement = this.#insertEvents[count];
    if (!statement) {
      const rows = Array.from({ length: count }, () => `(? * ${RUN_KEY_SHIFT} + ?, ?, ?, ?, ?, ?, ?)`).join(', ');
      statement = this.#sqlite.prepare(
        `insert into events (id, type_code, at, payload, blob_refs, packing, chain) values ${rows}`,
      );
      this.#insertEvents[count] = statement;
    }
    return statement;
  }

  /** Drops the run's fold: its batch did not commit. */
  forget(runId: string): void {
    this.#folds.forget(runId);
  }
}

/** An event's rowid holds its seq in 32 bits (see view-sql): a run has at most 2³² − 1 events. */
function checkSeqRange(runId: string, events: readonly RunEvent[]): void {
  const last = events.length - 1;
  if ((events[last] as RunEvent).seq < RUN_KEY_SHIFT) return;
  throw new StepwiseError(
    ErrorCodes.INPUT_INVALID,
    `run ${runId}: the SQLite store holds at most ${RUN_KEY_SHIFT - 1} events per run`,
    { location: `events[${last}].seq` },
  );
}

/**
 * For a tool-result (`events[index]`): the attempt of its call (a tool-call earlier in the batch,
 * else the fold's execution as the batch found it), from which its execution id may derive; else
 * `undefined`.
 */
function attemptOf(events: readonly RunEvent[], index: number, fold: FoldedRun, calls: BatchCalls): number | undefined {
  const event = events[index] as RunEvent;
  if (event.type !== 'tool-result') return undefined;
  const attempt: unknown =
    calls.callBefore(index, event.executionId)?.attempt ?? fold.executions.get(event.executionId)?.attempt;
  return typeof attempt === 'number' ? attempt : undefined;
}
