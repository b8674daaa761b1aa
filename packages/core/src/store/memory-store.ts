import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { applyEvent, emptyRun, executionRecord, type FoldedRun, summarizeRun } from '../journal/fold-run.js';
import {
  type CancelRequest,
  type ExecutionRecord,
  type Lease,
  type LiveOutputTail,
  type RunFilter,
  type RunStore,
  type RunSummary,
  searchWords,
} from '../journal/run-store.js';

interface StoredRun {
  readonly events: RunEvent[];
  /**
   * Made and folded lazily, on the first read after appends: appends stay cheap, and a run nobody
   * reads back (most, in a host that only runs plans) keeps no fold beside its events.
   */
  fold: FoldedRun | undefined;
}

function folded(runId: string, run: StoredRun): FoldedRun {
  run.fold ??= emptyRun(runId);
  for (let index = run.fold.lastSeq; index < run.events.length; index++) {
    applyEvent(run.fold, run.events[index] as RunEvent);
  }
  return run.fold;
}

/** Checks a batch against the journal's tail: seq continues without gaps, one run only. */
export function checkBatch(runId: string, lastSeq: number, events: readonly RunEvent[]): void {
  events.forEach((event, index) => {
    if (event.runId !== runId || event.seq !== lastSeq + 1 + index) {
      throw new StepwiseError(
        ErrorCodes.JOURNAL_CONFLICT,
        `event ${index} of the batch has run ${event.runId} seq ${event.seq}; expected run ${runId} seq ${lastSeq + 1 + index}`,
        { location: `${runId}#${event.seq}` },
      );
    }
  });
}

/** A century: any longer and the expiry is not a date. */
const MAX_TTL_MS = 100 * 365 * 24 * 3_600_000;

/** Refuses (E004) a lease request whose expiry could not be computed; every store checks with it. */
export function checkLeaseRequest(runId: unknown, owner: unknown, ttlMs: unknown): void {
  if (
    typeof runId !== 'string' ||
    runId === '' ||
    typeof owner !== 'string' ||
    typeof ttlMs !== 'number' ||
    !Number.isFinite(ttlMs) ||
    ttlMs < 0 ||
    ttlMs > MAX_TTL_MS
  ) {
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      `a lease needs a run id, an owner and a time-to-live ≥ 0 ms (got ${JSON.stringify({ runId, owner, ttlMs })})`,
      { location: typeof runId === 'string' && runId !== '' ? runId : 'lease' },
    );
  }
}

/** Refuses (E004) a cancel request without a run id, a `by` or an `at`; every store checks with it. */
export function checkCancelRequest(runId: unknown, request: unknown): void {
  const value = request as Partial<CancelRequest> | null | undefined;
  if (
    typeof runId !== 'string' ||
    runId === '' ||
    typeof value?.by !== 'string' ||
    value.by === '' ||
    typeof value.at !== 'string' ||
    (value.reason !== undefined && typeof value.reason !== 'string')
  ) {
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      `a cancel request needs a run id, who asks (by) and when (at) (got ${JSON.stringify({ runId, request })})`,
      { location: typeof runId === 'string' && runId !== '' ? runId : 'requestCancel' },
    );
  }
}

/** Refuses (E004) a live output tail a store could not key or show; every store checks with it. */
export function checkLiveOutputTail(tail: unknown): asserts tail is LiveOutputTail {
  const value = tail as Partial<LiveOutputTail> | null | undefined;
  const ids = [value?.runId, value?.stepId, value?.executionId];
  if (
    !ids.every((id) => typeof id === 'string' && id !== '') ||
    (value?.stream !== 'stdout' && value?.stream !== 'stderr') ||
    typeof value.text !== 'string' ||
    typeof value.total !== 'number' ||
    typeof value.at !== 'string'
  ) {
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      'a live output tail needs runId, stepId, executionId, stream (stdout or stderr), text, total and at',
      { location: typeof value?.runId === 'string' && value.runId !== '' ? value.runId : 'writeLiveOutput' },
    );
  }
}

/** Leases as every store enforces them; `held` is the run's current lease, if any. */
export function checkLease(runId: string, held: Lease | undefined, lease: Lease | undefined, now: number): void {
  if (lease) {
    if (!held || held.token !== lease.token) {
      throw new StepwiseError(
        ErrorCodes.LEASE_CONFLICT,
        `lease token ${lease.token} on run ${runId} is stale${held ? ` (held by ${held.owner}, token ${held.token})` : ''}`,
        { location: runId },
      );
    }
  } else if (held && Date.parse(held.expiresAt) > now) {
    throw new StepwiseError(
      ErrorCodes.LEASE_CONFLICT,
      `run ${runId} is leased by ${held.owner}; append with its lease`,
      {
        location: runId,
      },
    );
  }
}

/**
 * An in-memory RunStore: the reference implementation of the contract, for tests and for
 * hosts that do not need durability. Passes the conformance suite.
 */
export class MemoryStore implements RunStore {
  readonly #runs = new Map<string, StoredRun>();
  readonly #executions = new Map<string, string>();
  readonly #leases = new Map<string, Lease>();
  readonly #tokens = new Map<string, number>();
  readonly #cancelRequests = new Map<string, CancelRequest>();
  /** Live output tails by run, then by `executionId\0stream`. */
  readonly #liveOutput = new Map<string, Map<string, LiveOutputTail>>();
  #closed = false;

  async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    this.#assertOpen();
    if (events.length === 0) return;
    const run = this.#runs.get(runId) ?? { events: [], fold: undefined };
    // Lease first: a fenced-off writer learns it lost the run (E501), whatever its seq.
    checkLease(runId, this.#leases.get(runId), lease, Date.now());
    checkBatch(runId, run.events.length, events);
    if (!this.#runs.has(runId)) this.#runs.set(runId, run);
    for (const event of events) {
      run.events.push(event);
      if (event.type === 'tool-call') this.#executions.set(event.executionId, runId);
      else if (event.type === 'run-end') {
        this.#cancelRequests.delete(runId);
        this.#liveOutput.delete(runId);
      }
    }
  }

  async *read(runId: string, afterSeq = 0): AsyncIterable<RunEvent> {
    this.#assertOpen();
    const events = this.#runs.get(runId)?.events ?? [];
    // seq n is at index n-1: no search needed.
    for (let index = Math.max(0, afterSeq); index < events.length; index++) yield events[index] as RunEvent;
  }

  async getRun(runId: string): Promise<RunSummary | undefined> {
    this.#assertOpen();
    const run = this.#runs.get(runId);
    return run ? summarizeRun(folded(runId, run)) : undefined;
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    this.#assertOpen();
    const statuses = filter.status === undefined ? undefined : [filter.status].flat();
    const words = searchWords(filter.search);
    const matching = [...this.#runs]
      .map(([runId, run]) => summarizeRun(folded(runId, run)))
      .filter(
        (run) =>
          (!statuses || statuses.includes(run.status)) &&
          (!filter.planId || run.planId === filter.planId) &&
          (!filter.since || run.createdAt >= filter.since) &&
          (!filter.until || run.createdAt < filter.until) &&
          (words.length === 0 || containsAll(`${run.goal ?? ''}\n${run.planId}\n${run.runId}`, words)),
      )
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
    const offset = filter.offset ?? 0;
    return matching.slice(offset, offset + (filter.limit ?? 100));
  }

  async getExecution(executionId: string): Promise<ExecutionRecord | undefined> {
    this.#assertOpen();
    const runId = this.#executions.get(executionId);
    const run = runId === undefined ? undefined : this.#runs.get(runId);
    return run && runId !== undefined ? executionRecord(folded(runId, run), executionId) : undefined;
  }

  async acquireLease(runId: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    this.#assertOpen();
    checkLeaseRequest(runId, owner, ttlMs);
    const now = Date.now();
    const held = this.#leases.get(runId);
    if (held && held.owner !== owner && Date.parse(held.expiresAt) > now) return undefined;
    const token = (this.#tokens.get(runId) ?? 0) + 1;
    this.#tokens.set(runId, token);
    const lease: Lease = {
      runId,
      owner,
      token,
      ttlMs,
      expiresAt: new Date(now + ttlMs).toISOString(),
    };
    this.#leases.set(runId, lease);
    return this.#withCancelRequest(lease);
  }

  async renewLease(lease: Lease): Promise<Lease> {
    this.#assertOpen();
    checkLeaseRequest(lease?.runId, lease?.owner, lease?.ttlMs);
    const held = this.#leases.get(lease.runId);
    checkLease(lease.runId, held, lease, Date.now());
    const { cancelRequest: _previous, ...renewable } = lease;
    const renewed: Lease = { ...renewable, expiresAt: new Date(Date.now() + lease.ttlMs).toISOString() };
    this.#leases.set(lease.runId, renewed);
    return this.#withCancelRequest(renewed);
  }

  async requestCancel(runId: string, request: CancelRequest): Promise<boolean> {
    this.#assertOpen();
    checkCancelRequest(runId, request);
    const run = this.#runs.get(runId);
    if (!run || folded(runId, run).status !== 'running') return false;
    this.#cancelRequests.set(runId, { ...request });
    return true;
  }

  async writeLiveOutput(tail: LiveOutputTail): Promise<void> {
    this.#assertOpen();
    checkLiveOutputTail(tail);
    const tails = this.#liveOutput.get(tail.runId) ?? new Map<string, LiveOutputTail>();
    this.#liveOutput.set(tail.runId, tails);
    tails.delete(`${tail.executionId}\0${tail.stream}`);
    tails.set(`${tail.executionId}\0${tail.stream}`, { ...tail });
  }

  async readLiveOutput(runId: string): Promise<LiveOutputTail[]> {
    this.#assertOpen();
    return [...(this.#liveOutput.get(runId)?.values() ?? [])].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  }

  async clearLiveOutput(runId: string, executionId: string): Promise<void> {
    this.#assertOpen();
    const tails = this.#liveOutput.get(runId);
    tails?.delete(`${executionId}\0stdout`);
    tails?.delete(`${executionId}\0stderr`);
  }

  #withCancelRequest(lease: Lease): Lease {
    const request = this.#cancelRequests.get(lease.runId);
    return request ? { ...lease, cancelRequest: request } : lease;
  }

  async releaseLease(lease: Lease): Promise<void> {
    if (this.#leases.get(lease.runId)?.token === lease.token) this.#leases.delete(lease.runId);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'the memory store is closed');
  }
}

/** Whether `text` holds every one of `words` (lower-cased), in any case. */
function containsAll(text: string, words: readonly string[]): boolean {
  const lower = text.toLowerCase();
  return words.every((word) => lower.includes(word));
}
