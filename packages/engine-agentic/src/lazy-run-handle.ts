import {
  createRunHandle,
  type RunEvent,
  type RunHandle,
  type RunJournal,
  type RunResult,
  type RunStore,
} from '@stepwise/core';

/**
 * A RunHandle returned before the run's journal exists (taking the lease is async). Iteration
 * waits for the journal and then replays and follows it; when the run never started (invalid
 * plan, lease conflict) iteration ends at once and `result` rejects with the typed error.
 */
export function lazyRunHandle(options: {
  readonly runId: string;
  readonly store: RunStore;
  readonly journal: Promise<RunJournal | undefined>;
  readonly result: Promise<RunResult>;
  readonly cancel: (reason?: string) => void;
}): RunHandle {
  // Marked handled here; callers awaiting `result` still see the rejection.
  options.result.catch(() => undefined);
  options.journal.catch(() => undefined);
  return {
    runId: options.runId,
    result: options.result,
    cancel: options.cancel,
    async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
      const journal = await options.journal.catch(() => undefined);
      if (!journal) return;
      yield* createRunHandle({
        runId: options.runId,
        journal,
        store: options.store,
        result: options.result,
        cancel: options.cancel,
      });
    },
  };
}
