import type { RunEvent } from '@stepwise/core';
import { applyEvent, emptyRun, type FoldedRun } from '@stepwise/core/store';

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

  constructor(capacity: number, read: ReadEvents) {
    this.#capacity = capacity;
    this.#read = read;
  }

  /** The run's fold at `lastSeq` (the journal's last seq), taken out of the cache. */
  take(runId: string, lastSeq: number): FoldedRun {
    let fold = this.#folds.get(runId);
    this.#folds.delete(runId);
    if (!fold || fold.lastSeq > lastSeq) fold = emptyRun(runId);
    while (fold.lastSeq < lastSeq) {
      const page = this.#read(runId, fold.lastSeq, Math.min(CATCH_UP_PAGE, lastSeq - fold.lastSeq));
      if (page.length === 0) break;
      for (const event of page) applyEvent(fold, event);
    }
    return fold;
  }

  /** Puts back the fold of a batch that succeeded; the least recently used fold leaves when the cache is full. */
  keep(fold: FoldedRun): void {
    if (fold.status !== 'running' || this.#capacity === 0) return;
    // The fold never reads these lists back, and their entries are in the journal and the tables.
    fold.modelCalls.length = 0;
    fold.approvals.length = 0;
    fold.revisions.length = 0;
    this.#folds.set(fold.runId, fold);
    if (this.#folds.size > this.#capacity) {
      const oldest = this.#folds.keys().next().value;
      if (oldest !== undefined) this.#folds.delete(oldest);
    }
  }

  forget(runId: string): void {
    this.#folds.delete(runId);
  }
}
