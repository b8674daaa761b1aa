import { createRunHandle, type RunEvent, RunJournal, type RunResult, type RunStore } from '@stepwise/core';

/**
 * A RunHandle that exists before the run's journal does. `run()` must return synchronously,
 * but the journal comes from an async lease; iterators wait for it and then follow core's
 * handle (recorded events from the store, then live ones). A replay has no journal of its
 * own: a journal that never writes stands in, so the core handle reads the recorded run.
 */
export function createLazyRunHandle(options: {
  readonly runId: string;
  readonly store: RunStore;
  readonly journal: Promise<RunJournal | undefined>;
  readonly result: Promise<RunResult>;
  readonly cancel: (reason?: string) => void;
}) {
  const { runId, store, result, cancel } = options;
  return {
    runId,
    result,
    cancel,
    async *[Symbol.asyncIterator](): AsyncGenerator<RunEvent, void, undefined> {
      const journal = (await options.journal) ?? new RunJournal({ runId, store });
      yield* createRunHandle({ runId, journal, store, result, cancel });
    },
  };
}
