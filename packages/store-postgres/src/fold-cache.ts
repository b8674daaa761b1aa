import type { FoldedRun } from '@stepwise/core/store';

/**
 * Folded runs this process wrote or read recently, so an append applies only its own batch
 * instead of re-reading the journal. Each run is used by one caller at a time (`use`); a fold
 * whose use failed is dropped, since it may hold events that never committed.
 */
export class FoldCache {
  readonly #folds = new Map<string, FoldedRun>();
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  use<T>(runId: string, body: (cached: FoldedRun | undefined) => Promise<{ fold: FoldedRun; value: T }>): Promise<T> {
    const previous = this.#queues.get(runId) ?? Promise.resolve();
    const next = previous.then(
      () => this.#run(runId, body),
      () => this.#run(runId, body),
    );
    this.#queues.set(runId, next);
    const cleanup = () => {
      if (this.#queues.get(runId) === next) this.#queues.delete(runId);
    };
    next.then(cleanup, cleanup);
    return next;
  }

  async #run<T>(runId: string, body: (cached: FoldedRun | undefined) => Promise<{ fold: FoldedRun; value: T }>) {
    const cached = this.#folds.get(runId);
    this.#folds.delete(runId);
    const { fold, value } = await body(cached);
    // Re-inserted last: the Map's order is the recency order.
    this.#folds.set(runId, fold);
    if (this.#folds.size > this.#capacity) {
      const oldest = this.#folds.keys().next().value;
      if (oldest !== undefined) this.#folds.delete(oldest);
    }
    return value;
  }

  clear(): void {
    this.#folds.clear();
  }
}
