import { createRunHandle, type RunEvent, type RunJournal, type RunResult, type RunStore } from '@stepwise/core';
import type { DagProgress, DagRunHandle, DagStepStatus } from './dag-options.js';

export interface DagRunHandleOptions {
  readonly runId: string;
  readonly store: RunStore;
  /** The session's journal once it exists; `undefined` when there is no live session (a run that already ended). */
  readonly journal: Promise<RunJournal | undefined>;
  readonly result: Promise<RunResult>;
  readonly cancel: (reason?: string) => void;
  readonly progress: () => DagProgress;
  readonly stepStatus: (stepId: string) => DagStepStatus | undefined;
}

/**
 * A run handle that exists before its session does: `run()` must return at once, while taking the
 * lease and journaling `run-start` are asynchronous. Iterators wait for the journal, then behave as
 * core's handle does (replay from the store, then follow live events).
 */
export function createDagRunHandle(options: DagRunHandleOptions): DagRunHandle {
  const { runId, store, result } = options;
  return {
    runId,
    result,
    cancel: options.cancel,
    progress: options.progress,
    stepStatus: options.stepStatus,
    async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
      let journal: RunJournal | undefined;
      try {
        journal = await options.journal;
      } catch {
        // The run never started (invalid plan, lease held elsewhere): `result` carries the error.
        return;
      }
      if (!journal) {
        yield* store.read(runId);
        return;
      }
      yield* createRunHandle({ runId, journal, store, result, cancel: options.cancel });
    },
  };
}
