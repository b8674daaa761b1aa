import { CancelRequestListeners } from './cancel-request-listeners.js';
import type { RunEvent, RunEventInput } from './events.js';
import { ChainWriter, type JournalKey, journalKeyObject } from './journal-chain.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LiveOutput } from './live-output.js';
import { livePublisherFor } from './live-output-publisher.js';
import { createRedactor, type Redactor } from './redact.js';
import type { CancelRequest, Lease, RunStore } from './run-store.js';
import { appendOrSettle } from './settle-append.js';

let lastMillis = -1;
let lastIso = '';
/** `new Date().toISOString()`, formatted once per millisecond: journals stamp thousands of events a second. */
export function isoNow(): string {
  const now = Date.now();
  if (now !== lastMillis) {
    lastMillis = now;
    lastIso = new Date(now).toISOString();
  }
  return lastIso;
}

/**
 * Fields Stepwise itself writes (ids, enums, times, counts): never secrets, and ids must stay
 * intact for the fold. Everything else (args, output, errors, plans, model traffic) is redacted,
 * and so are the ids a plan brings (`planId`, `stepId`), as the plan's own copy is.
 */
const ENVELOPE_KEYS = new Set([
  'type',
  'runId',
  'at',
  'stepId',
  'executionId',
  'tool',
  'effect',
  'status',
  'startedAt',
  'planDigest',
  'engine',
  'decision',
  'source',
  'limit',
]);

function redactFields<T extends object>(redactor: Redactor, value: T): T {
  let copy: Record<string, unknown> | undefined;
  for (const key in value) {
    const field = (value as Record<string, unknown>)[key];
    // Numbers, booleans and absent values carry no secret: most of an event's fields end here.
    if (typeof field !== 'string' && (typeof field !== 'object' || field === null)) continue;
    if (ENVELOPE_KEYS.has(key) && key !== 'stepId') continue;
    // A step id comes from the plan and may hold a secret: redacted as the plan's copy is, so the fold still matches them.
    const redacted =
      key === 'stepId' && typeof field === 'string'
        ? redactor.redactText(field)
        : key === 'result' && typeof field === 'object' && field !== null
          ? redactFields(redactor, field)
          : redactor.redact(field);
    if (redacted !== field) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[key] = redacted;
    }
  }
  return (copy ?? value) as T;
}

/** Redacts an event's payload; the envelope (ids, enums, times) is left as written. */
export function redactEvent<E extends RunEvent>(redactor: Redactor, event: E): E {
  return redactFields(redactor, event);
}

export type EventListener = (event: RunEvent) => void;

export interface RunJournalOptions {
  readonly runId: string;
  readonly store: RunStore;
  /** The run's lease; every append carries its fencing token. */
  readonly lease?: Lease | undefined;
  /**
   * Until when (local epoch ms) `lease` is held unrenewed: `leaseDeadline(lease, sentAt, receivedAt)`
   * of the request that took it. Past it the lease counts as lost. Default: computed when the
   * journal is created, as if the lease had just been taken.
   */
  readonly leaseDeadline?: number | undefined;
  /** Seq of the last event already in the store (0 for a new run). */
  readonly lastSeq?: number;
  readonly redactor?: Redactor | undefined;
  /** Renew the lease this often (ms); default a third of its TTL. */
  readonly renewEveryMs?: number | undefined;
  /** The run's plan digest, when known (saves re-hashing a large plan at the end). */
  readonly planDigest?: string | undefined;
  /** When an idempotent step's end must be durable (see `Durability`). Default `'step'`. */
  readonly durability?: Durability | undefined;
  /** Keys the run's hash chain (HMAC-SHA-256); without it the chain is plain SHA-256. See `verifyJournal`. */
  readonly journalKey?: JournalKey | undefined;
  /**
   * The chain value of the last event already in the store (`lastSeq`), from `verifyJournal`. A new
   * run (`lastSeq` 0) needs none; a run reopened without one was journaled before chains existed,
   * and its new events get none either.
   */
  readonly lastChain?: string | undefined;
  /** Publish a running command's output tail to a store that keeps it (see `LiveOutputPublisher`). Default true. */
  readonly liveOutput?: boolean | undefined;
}

/**
 * `step`: every step's end is committed before a step that depends on it starts, so a crash never
 * runs a finished step again. `batched`: the end of a step whose tool is idempotent may commit
 * together with later work, at the latest before the next non-idempotent tool runs, once
 * `BATCHED_EVENTS_MAX` events wait or the oldest has waited `BATCHED_WAIT_MAX_MS`, or when the run
 * ends; a crash can run such steps again (their
 * tool said that is safe). Nothing else changes: a non-idempotent call is still durable before its
 * tool runs, and events still reach listeners only once they are durable.
 */
export type Durability = 'step' | 'batched';

/**
 * How many events may wait for an idempotent step's end to commit (under `batched` durability, and
 * under `step` durability once the step's slot is free): bounds the work a crash can repeat, and
 * the memory held. Not more: events that wait through several young-generation collections teach
 * V8 to allocate every later event (and the store's rows for it) in the old generation, where the
 * garbage stays until a full collection — at 1,024 a 100,000-step fan-out's peak RSS on SQLite
 * went from about 320 MB to about 400 MB in one run out of two. A commit per 64 four-event steps
 * costs about a microsecond and a half per step.
 */
export const BATCHED_EVENTS_MAX = 256;
/**
 * How long (ms) an event may wait for an idempotent step's end to commit, as `BATCHED_EVENTS_MAX`.
 * A step that awaits I/O lets the pending commit run anyway; this bounds steps that keep the
 * thread busy.
 */
export const BATCHED_WAIT_MAX_MS = 100;
const settled = Promise.resolve();

/**
 * The only writer of a run's journal: stamps seq and time, redacts, links each event into the
 * run's hash chain as its batch is appended, appends in order, and tells listeners only after the
 * store acknowledged. Engines call `emit` freely and
 * `flush` at durable points (before a non-idempotent tool runs, when a step ends).
 *
 * Group commit: while more than one step is open (between its `step-start` and `step-end`), or
 * while an append is in flight, a flush does not append at once. It waits for the append in
 * flight and for the promise chains that are ready to run, then appends everything emitted by then in one batch —
 * one store transaction for the concurrent steps that flushed meanwhile. Every flush still
 * resolves only once its own events are durable. A single open step (a chain) appends at once.
 */
export class RunJournal {
  readonly runId: string;
  readonly redactor: Redactor;
  readonly planDigest: string | undefined;
  /** What the run shows while it happens and does not journal (a command's output, a model's answer). */
  readonly live: LiveOutput;
  readonly #store: RunStore;
  readonly #leaseKeeper: LeaseKeeper | undefined;
  #nextSeq: number;
  #pending: RunEvent[] = [];
  /** When the oldest pending event was emitted (epoch ms). */
  #pendingSince = 0;
  #chain: Promise<void> = Promise.resolve();
  /** Batches being appended (0 or 1: a batch starts only after the one before settled). */
  #writing = 0;
  /** The next group commit, while it waits to start: later flushes join it. */
  #scheduled: Promise<void> | undefined;
  /**
   * Steps between `step-start` and `step-end`: more than one means concurrent flushes are coming.
   * A short array, not a Set: a long-lived Set that gains and loses an entry per step gets a new
   * hash table every few steps, allocated in the old generation once the Set is old (about 11 MB
   * of garbage over a 100,000-step chain).
   */
  readonly #openSteps: string[] = [];
  #failure: unknown;
  readonly #listeners = new Set<EventListener>();
  readonly #failureListeners = new Set<(error: unknown) => void>();
  readonly #cancel: CancelRequestListeners;
  readonly #batched: boolean;
  /** Seq of the last event the store acknowledged. */
  #durableSeq: number;
  /** A scheduler waits for dependencies' ends before a step starts (see `gateDependents`). */
  #gated = false;
  /** The run's hash chain: batches are appended one after the other, so events are linked in seq order. */
  readonly #links: ChainWriter;

  constructor(options: RunJournalOptions) {
    this.runId = options.runId;
    this.#store = options.store;
    this.#nextSeq = (options.lastSeq ?? 0) + 1;
    this.#durableSeq = options.lastSeq ?? 0;
    this.redactor = options.redactor ?? createRedactor();
    const publisher = livePublisherFor(this.runId, this.#store, options.liveOutput);
    this.live = new LiveOutput(this.runId, this.redactor, publisher);
    this.planDigest = options.planDigest;
    this.#batched = options.durability === 'batched';
    const key = options.journalKey === undefined ? undefined : journalKeyObject(options.journalKey);
    this.#cancel = new CancelRequestListeners(options.lease?.cancelRequest);
    this.#links = new ChainWriter(this.runId, options.lastSeq ?? 0, options.lastChain, key);
    if (options.lease) {
      this.#leaseKeeper = new LeaseKeeper({
        store: this.#store,
        lease: options.lease,
        deadline: options.leaseDeadline,
        renewEveryMs: options.renewEveryMs,
        onLost: (error) => this.#fail(error),
        onCancelRequest: (request) => this.#cancel.deliver(request),
      });
    }
  }

  /** The cancel request another process recorded for this run (`RunStore.requestCancel`), once the lease carried one. */
  get cancelRequest(): CancelRequest | undefined {
    return this.#cancel.request;
  }

  /** Called once, when the lease carries a cancel request: at its acquisition (then at once) or a renewal. */
  onCancelRequest(listener: (request: CancelRequest) => void): () => void {
    return this.#cancel.add(listener);
  }

  get lease(): Lease | undefined {
    return this.#leaseKeeper?.lease;
  }

  /**
   * Why this journal takes no more events — its lease was lost (E501: the store refused a renewal
   * or an append, or the lease's time ran out unrenewed) or the store refused a batch — checking
   * the lease's deadline first; `undefined` while the run may go on. The kernel asks before a tool starts.
   */
  fencedBy(): unknown {
    if (this.#failure === undefined) this.#leaseKeeper?.check();
    return this.#failure;
  }

  /** The store this journal writes to (what was committed can be read back from it). */
  get store(): RunStore {
    return this.#store;
  }

  /** Seq of the last event emitted (flushed or not). */
  get lastSeq(): number {
    return this.#nextSeq - 1;
  }

  /** Seq of the last event the store acknowledged. */
  get durableSeq(): number {
    return this.#durableSeq;
  }

  /**
   * Called by a scheduler that starts no step before its dependencies' ends are durable (it calls
   * `flushThrough` first). Under `step` durability an idempotent step's end then commits with the
   * work that starts meanwhile (the next group commit) instead of holding its step until its own
   * commit. Returns false under `batched` durability, where dependents need not wait.
   */
  gateDependents(): boolean {
    if (this.#batched) return false;
    this.#gated = true;
    return true;
  }

  /** Resolves once every event up to `seq` is durable. */
  flushThrough(seq: number): Promise<void> {
    return this.#durableSeq >= seq ? settled : this.flush();
  }

  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Called once, when the store first refuses a batch — also a commit nobody awaits (`commitSoon`),
   * so a run can stop at once instead of at its next flush — or the lease is lost (E501), the
   * moment a renewal finds it gone or its time runs out. A listener added after the failure is
   * called at once.
   */
  onFailure(listener: (error: unknown) => void): () => void {
    if (this.#failure !== undefined) {
      listener(this.#failure);
      return () => false;
    }
    this.#failureListeners.add(listener);
    return () => this.#failureListeners.delete(listener);
  }

  /** Stamps (in place: pass a fresh object), redacts and queues an event; returns it as it will be stored. */
  emit<E extends RunEventInput>(input: E): RunEvent {
    // The journal takes ownership of `input` (callers pass fresh literals): stamping it in place
    // saves a copy of every event on the hot path. An object that was stamped before (an event
    // re-emitted) is copied, so a stored event is never changed.
    const owned = ('seq' in input ? { ...input } : input) as unknown as RunEvent;
    // Redacted before a seq is taken: a value the redactor refuses (E004, too deep) leaves no gap.
    const event = redactEvent(this.redactor, owned);
    const stamped = event as unknown as { runId: string; seq: number; at: string };
    stamped.runId = this.runId;
    stamped.seq = this.#nextSeq++;
    stamped.at = isoNow();
    if (this.#pending.length === 0) this.#pendingSince = Date.now();
    this.#pending.push(event);
    if (event.type === 'step-start') this.#stepOpened(event.stepId);
    else if (event.type === 'step-end') this.#stepClosed(event.stepId);
    return event;
  }

  #stepOpened(stepId: string): void {
    if (!this.#openSteps.includes(stepId)) this.#openSteps.push(stepId);
  }

  #stepClosed(stepId: string): void {
    const at = this.#openSteps.indexOf(stepId);
    if (at < 0) return;
    // Order does not matter: the last entry takes the closed one's place.
    const last = this.#openSteps.pop() as string;
    if (at < this.#openSteps.length) this.#openSteps[at] = last;
  }

  /** Makes every queued event durable (in order); rejects if the store refused a batch. */
  flush(): Promise<void> {
    if (this.#scheduled) return this.#scheduled;
    if (this.#pending.length === 0) return this.#chain;
    if (this.#writing === 0 && this.#openSteps.length <= 1) {
      // Nothing in flight and no other step about to flush: append now, without a `then` hop.
      const batch = this.#pending;
      this.#pending = [];
      this.#writing++;
      this.#chain = this.#write(batch);
      return this.#chain;
    }
    return this.#schedule();
  }

  /**
   * After a step's `step-end`: durable before dependents start. An idempotent step's end may
   * commit with later work: under `batched` durability (see `Durability`), and under `step`
   * durability when a scheduler gates its dependents (`gateDependents`); a failure or a
   * non-idempotent step's end is always awaited.
   */
  endOfStep(idempotent: boolean): Promise<void> {
    if (
      !idempotent ||
      this.#failure ||
      !(this.#batched || this.#gated) ||
      // Bounds on what waits, under either durability: steps that never yield (quick tools) would
      // otherwise queue a whole fan-out's events before the commit gets a turn.
      this.#pending.length >= BATCHED_EVENTS_MAX ||
      Date.now() - this.#pendingSince >= BATCHED_WAIT_MAX_MS
    ) {
      return this.flush();
    }
    this.commitSoon();
    return settled;
  }

  /**
   * Starts making queued events durable as soon as the promise chains ready to run have run,
   * without waiting for it: whatever is emitted meanwhile (a quick tool's result, other steps' events) joins the same
   * commit, and listeners still hear about a slow step before it ends. A refused batch fails the
   * journal; the next `flush` rejects with it.
   */
  commitSoon(): void {
    if (this.#scheduled || this.#pending.length === 0) return;
    this.#schedule().catch(() => undefined);
  }

  /** The next group commit: after the append in flight and the promise chains ready to run, everything pending then. */
  #schedule(): Promise<void> {
    const previous = this.#chain;
    const scheduled = new Promise<void>((resolve, reject) => {
      const start = () => {
        this.#scheduled = undefined;
        const batch = this.#pending;
        this.#pending = [];
        this.#writing++;
        this.#chain = this.#write(batch);
        this.#chain.then(resolve, reject);
      };
      // Once every promise chain that can run has run (a quick tool's result, the other steps'
      // flushes), not a timer: fake timers in a host's tests must not stall the journal.
      // A failed batch fails the journal; `#write` then rejects this one with the same error.
      const later = () => process.nextTick(start);
      previous.then(later, later);
    });
    this.#scheduled = scheduled;
    return scheduled;
  }

  async #write(batch: RunEvent[]): Promise<void> {
    try {
      // A lease whose time ran out unrenewed is lost before the store is asked (E501 rather than whatever
      // the store would answer a writer that lost its run, such as a seq conflict).
      if (this.#failure === undefined) this.#leaseKeeper?.check();
      if (this.#failure) throw this.#failure;
      // Linked as late as possible: the digest is of the event as the store is about to take it.
      for (const event of batch) this.#links.stamp(event);
      await appendOrSettle(this.#store, this.runId, batch, this.#leaseKeeper, () => this.#failure);
      this.#durableSeq = batch.at(-1)?.seq ?? this.#durableSeq;
    } catch (error) {
      this.#fail(error);
      throw error;
    } finally {
      this.#writing--;
    }
    for (const event of batch) {
      for (const listener of this.#listeners) {
        try {
          listener(event);
        } catch {
          // A listener's bug must not break the run or the journal.
        }
      }
    }
  }

  /** The first failure fences the journal off: nothing more is appended, the lease is no longer renewed. */
  #fail(error: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    this.#leaseKeeper?.stop();
    for (const listener of this.#failureListeners) {
      try {
        listener(error);
      } catch {
        // As with event listeners: a listener's bug must not hide the store's error.
      }
    }
  }

  /** `emit` then `flush`. */
  async record<E extends RunEventInput>(input: E): Promise<RunEvent> {
    const event = this.emit(input);
    await this.flush();
    return event;
  }

  /** Flushes, stops renewing and releases the lease. */
  async close(): Promise<void> {
    this.#leaseKeeper?.stop();
    try {
      await this.flush();
    } finally {
      const lease = this.#leaseKeeper?.lease;
      if (lease && !this.#failure) await this.#store.releaseLease(lease).catch(() => undefined);
    }
  }
}
