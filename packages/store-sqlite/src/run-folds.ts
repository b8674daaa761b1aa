import type { RunEvent } from '@stepwise/core';
import { applyEvent, type ExecutionState, emptyRun, type FoldChanges, type FoldedRun } from '@stepwise/core/store';
import { BatchCalls } from './batch-calls.js';

/** Reads a run's events after a seq, a page at a time (at most `limit`). */
export type ReadEvents = (runId: string, afterSeq: number, limit: number) => readonly RunEvent[];

const CATCH_UP_PAGE = 500;

/**
 * A kept fold forgets its ended calls in one pass once it holds this many calls (and twice what the
 * last pass kept, so a run with many calls in flight pays a pass per doubling, not per batch), into
 * a new map (see `forgetEndedCalls`). Forgetting each at its step's end, by deleting from the fold's
 * long-lived map, gave that map a new table at every step of a chain, and V8 allocates the tables
 * of a map in the old generation when the map lives there: garbage that stays until a full
 * collection. Old-generation growth per step of a 100,000-step SQLite chain and fan-out: 216 and
 * 219 bytes with passes into a new map at 4 calls (219 and 219 at 16); 257 and 650 deleting at 4; 497
 * and more deleting at 64; 1,040 and 1,006 deleting at each step's end.
 */
const FORGET_CALLS_AT = 4;

/**
 * Core's folds of the runs this store appends to, so an append applies only its own events. A
 * batch that fails never puts its fold back (`keep`), and the next `take` drops it: a failed batch
 * leaves nothing behind. A fold that is behind the journal (another process appended, or
 * the process opened the file) catches up from the journal; one that is ahead (a batch whose
 * commit failed) is folded again. Only running runs are kept: an ended or waiting run's next
 * append (continue, respond, resume) folds its journal once.
 */
export class RunFolds {
  readonly #folds = new Map<string, FoldedRun>();
  readonly #capacity: number;
  readonly #read: ReadEvents;
  /** Runs whose folds keep every call: a batch named a call their fold had forgotten. */
  readonly #keepsCalls = new Set<string>();
  /** How many calls a kept fold may hold before its next pass (see FORGET_CALLS_AT). */
  readonly #forgetAt = new WeakMap<FoldedRun, number>();
  readonly #forgetCallsAt: number;
  /** The run whose fold a batch took and has not put back: if that batch threw, its fold is stale. */
  #taken: string | undefined;
  /** The run kept last, the newest in the cache's order. */
  #newest: string | undefined;

  constructor(capacity: number, read: ReadEvents, forgetCallsAt = FORGET_CALLS_AT) {
    this.#capacity = capacity;
    this.#read = read;
    this.#forgetCallsAt = forgetCallsAt;
  }

  /**
   * The run's fold at `lastSeq` (the journal's last seq), for a batch of `events`, to be put back
   * with `keep` when the batch succeeded. A kept fold has forgotten its ended calls (see
   * `forgetEndedCalls`): one that must catch up or whose batch names a call it forgot is folded
   * afresh, and a run whose batch named one keeps its calls from then on.
   */
  take(runId: string, lastSeq: number, events: readonly RunEvent[]): FoldedRun {
    // The fold stays in the map while its batch runs (taking it out and putting it back would give
    // the map two new tables a batch, see FORGET_CALLS_AT); a batch that threw never put it back.
    const failed = this.#taken;
    if (failed !== undefined) {
      this.#folds.delete(failed);
      if (this.#newest === failed) this.#newest = undefined;
    }
    this.#taken = runId;
    let fold = this.#folds.get(runId);
    if (fold && !this.#keepsCalls.has(runId) && fold.lastSeq <= lastSeq) {
      const forgotten = namesForgottenCall(fold, events);
      if (forgotten) this.#keepsCalls.add(runId);
      if (forgotten || fold.lastSeq < lastSeq) fold = undefined;
    }
    if (!fold || fold.lastSeq > lastSeq) fold = emptyRun(runId);
    while (fold.lastSeq < lastSeq) {
      const page = this.#read(runId, fold.lastSeq, Math.min(CATCH_UP_PAGE, lastSeq - fold.lastSeq));
      if (page.length === 0) break;
      for (const event of page) applyEvent(fold, event);
    }
    return fold;
  }

  /**
   * Puts back the fold of a batch that succeeded (`changes`: what the batch changed); the least
   * recently used fold leaves when the cache is full.
   */
  keep(fold: FoldedRun, changes: FoldChanges): void {
    this.#taken = undefined;
    if (fold.status !== 'running' || this.#capacity === 0) {
      this.#drop(fold.runId);
      return;
    }
    // The fold never reads these lists back, and their entries are in the journal and the tables.
    fold.modelCalls.length = 0;
    fold.approvals.length = 0;
    fold.revisions.length = 0;
    if (!this.#keepsCalls.has(fold.runId)) this.#forgetEndedCalls(fold, changes);
    // Least recently used first: a fold moves to the end only when another run's was kept after it.
    if (this.#newest !== fold.runId) {
      this.#folds.delete(fold.runId);
      this.#newest = fold.runId;
    }
    this.#folds.set(fold.runId, fold);
    if (this.#folds.size > this.#capacity) {
      const oldest = this.#folds.keys().next().value;
      if (oldest !== undefined) this.#drop(oldest);
    }
  }

  forget(runId: string): void {
    this.#drop(runId);
  }

  #drop(runId: string): void {
    this.#folds.delete(runId);
    this.#keepsCalls.delete(runId);
    if (this.#newest === runId) this.#newest = undefined;
  }

  /**
   * Drops an ended step's copy of its call's result at once, and the calls no later event of the
   * run can touch in a pass once the fold holds enough of them (see FORGET_CALLS_AT).
   */
  #forgetEndedCalls(fold: FoldedRun, changes: FoldChanges): void {
    for (const stepId of changes.steps) {
      const step = fold.steps.get(stepId);
      if (step?.endedAt !== undefined) step.toolResult = undefined;
    }
    if (fold.executions.size < (this.#forgetAt.get(fold) ?? this.#forgetCallsAt)) return;
    forgetEndedCalls(fold);
    this.#forgetAt.set(fold, Math.max(this.#forgetCallsAt, 2 * fold.executions.size));
  }
}

/**
 * A `tool-result` of a call neither the fold nor an earlier event of the batch has: one the fold
 * forgot, or one the journal never called.
 */
function namesForgottenCall(fold: FoldedRun, events: readonly RunEvent[]): boolean {
  const calls = new BatchCalls(events);
  for (let index = 0; index < events.length; index++) {
    const event = events[index] as RunEvent;
    if (event.type === 'tool-result' && !fold.executions.has(event.executionId)) {
      if (calls.callBefore(index, event.executionId) === undefined) return true;
    }
    calls.pass(index);
  }
  return false;
}

/**
 * Drops the calls no later event of the run can touch: a call with its result whose step has
 * ended or gone on to another attempt. The kernel names a call only from its `tool-call` to its
 * `tool-result`, both before its step's `step-end`; a journal that names one later gets its fold
 * afresh (see `take`). Their rows and events hold them; without this a long run's fold kept every
 * call it made, arguments and output, until the run ended: about 300 bytes a no-op step, more than
 * the step's own state.
 */
function forgetEndedCalls(fold: FoldedRun): void {
  // Into a new map rather than deleting from the fold's: the fold's map lives in the old generation,
  // where each table it grows into or shrinks to is allocated, and a batch of many calls (a fan-out's)
  // made it grow through several and shrink back; a new one grows young and mostly dies young.
  const kept = new Map<string, ExecutionState>();
  for (const [executionId, execution] of fold.executions) {
    if (execution.resultSeq !== undefined) {
      const step = fold.steps.get(execution.stepId);
      if (step === undefined || step.endedAt !== undefined || step.executionId !== executionId) continue;
    }
    kept.set(executionId, execution);
  }
  fold.executions = kept;
}
