import type { RunEvent } from '@stepwise/core';
import { applyEvent, emptyRun, type FoldChanges, type FoldedRun } from '@stepwise/core/store';

/** Reads a run's events after a seq, a page at a time (at most `limit`). */
export type ReadEvents = (runId: string, afterSeq: number, limit: number) => readonly RunEvent[];

const CATCH_UP_PAGE = 500;

/**
 * Core's folds of the runs this store appends to, so an append applies only its own events. A
 * fold is taken out while a batch uses it and put back only after the batch succeeded: a failed
 * batch leaves nothing behind. A fold that is behind the journal (another process appended, or
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

  constructor(capacity: number, read: ReadEvents) {
    this.#capacity = capacity;
    this.#read = read;
  }

  /**
   * The run's fold at `lastSeq` (the journal's last seq), taken out of the cache, for a batch of
   * `events`. A kept fold has forgotten its ended calls (see `forgetEndedCalls`): one that must catch
   * up or whose batch names a call it forgot is folded afresh, and a run whose batch named one keeps
   * its calls from then on.
   */
  take(runId: string, lastSeq: number, events: readonly RunEvent[]): FoldedRun {
    let fold = this.#folds.get(runId);
    this.#folds.delete(runId);
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
    if (fold.status !== 'running' || this.#capacity === 0) {
      this.#keepsCalls.delete(fold.runId);
      return;
    }
    // The fold never reads these lists back, and their entries are in the journal and the tables.
    fold.modelCalls.length = 0;
    fold.approvals.length = 0;
    fold.revisions.length = 0;
    if (!this.#keepsCalls.has(fold.runId)) forgetEndedCalls(fold, changes);
    this.#folds.set(fold.runId, fold);
    if (this.#folds.size > this.#capacity) {
      const oldest = this.#folds.keys().next().value;
      if (oldest !== undefined) {
        this.#folds.delete(oldest);
        this.#keepsCalls.delete(oldest);
      }
    }
  }

  forget(runId: string): void {
    this.#folds.delete(runId);
  }
}

/** Batches up to this many events look for a result's call by scanning back; larger ones index their calls. */
const SCAN_BACK_MAX = 16;

/**
 * A `tool-result` of a call neither the fold nor an earlier event of the batch has: one the fold
 * forgot, or one the journal never called. A small batch's result has its call just before it; a
 * large one (a batched fan-out's, calls first and results after) gets its calls in a set, so the
 * check stays linear in the batch.
 */
function namesForgottenCall(fold: FoldedRun, events: readonly RunEvent[]): boolean {
  const called = events.length > SCAN_BACK_MAX ? new Set<string>() : undefined;
  for (let index = 0; index < events.length; index++) {
    const event = events[index] as RunEvent;
    if (event.type === 'tool-call') called?.add(event.executionId);
    if (event.type !== 'tool-result' || fold.executions.has(event.executionId)) continue;
    const known = called ? called.has(event.executionId) : calledBefore(events, index, event.executionId);
    if (!known) return true;
  }
  return false;
}

function calledBefore(events: readonly RunEvent[], before: number, executionId: string): boolean {
  for (let index = before - 1; index >= 0; index--) {
    const event = events[index] as RunEvent;
    if (event.type === 'tool-call' && event.executionId === executionId) return true;
  }
  return false;
}

/**
 * Drops the calls no later event of the run can touch, once a batch finished them or ended their
 * step: a call with its result whose step has ended (or, in the same batch, gone on to another
 * attempt), and an ended step's copy of its call's result (read only by a resume, which folds the
 * journal afresh). The kernel names a call only from its `tool-call` to its `tool-result`, both
 * before its step's `step-end`; a journal that names one later gets its fold afresh (see `take`).
 * Their rows and events hold them; without this a long run's fold kept every call it made,
 * arguments and output, until the run ended: about 300 bytes a no-op step, more than the step's own
 * state. A failed attempt's call whose retry starts in a later batch stays until the run ends.
 */
function forgetEndedCalls(fold: FoldedRun, changes: FoldChanges): void {
  for (const executionId of changes.executions) {
    const execution = fold.executions.get(executionId);
    if (execution?.resultSeq === undefined) continue;
    const step = fold.steps.get(execution.stepId);
    if (step === undefined || step.endedAt !== undefined || step.executionId !== executionId) {
      fold.executions.delete(executionId);
    }
  }
  for (const stepId of changes.steps) {
    const step = fold.steps.get(stepId);
    if (step?.endedAt === undefined) continue;
    step.toolResult = undefined;
    const executionId = step.executionId;
    if (executionId !== undefined && fold.executions.get(executionId)?.resultSeq !== undefined) {
      fold.executions.delete(executionId);
    }
  }
}
