import { ErrorCodes, messageOf, StepwiseError } from '../errors.js';
import { cancelRequestReason } from '../journal/cancel-request-listeners.js';
import type { RunEvent, RunResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import type { RunStore } from '../journal/run-store.js';
import type { PlanRevision } from '../plan/plan-revision.js';
import { createLazyRunHandle } from '../run/run-handle.js';
import type { ProgressRunHandle, RevisionRequest, RunProgress } from './engine-policy.js';
import type { RunScheduler } from './run-scheduler.js';

export type Listener = (event: RunEvent) => void;

/** What opening a session produced: a live scheduler, or the recorded result of a run that had ended. */
export type OpenedSession =
  | { readonly scheduler: RunScheduler; readonly execute: () => Promise<RunResult> }
  | { readonly finished: RunResult; readonly events: readonly RunEvent[] };

/**
 * The one run lifecycle: wires a session that opens asynchronously (lease, `run-start` or the
 * resume fold) to the handle returned at once — cancel requests made before the session existed,
 * the caller's abort signal, listeners, progress — and guarantees no unhandled rejection.
 */
export function launchSession(options: {
  readonly runId: string;
  readonly store: RunStore;
  readonly total: number;
  readonly signal: AbortSignal | undefined;
  readonly listeners: readonly Listener[];
  readonly open: () => Promise<OpenedSession>;
}): ProgressRunHandle {
  const { store, signal, listeners } = options;
  let current: RunScheduler | undefined;
  let finished: RunProgress | undefined;
  let cancelReason: string | undefined;
  const cancel = (reason?: string) => {
    cancelReason ??= reason ?? 'the run was cancelled';
    current?.cancel(cancelReason);
  };
  const onAbort = () => cancel(messageOf(signal?.reason ?? 'aborted'));
  const opened = options.open();
  const journal = opened.then((value) => ('scheduler' in value ? value.scheduler.journal : undefined));
  const result = opened.then(async (value) => {
    if (!('scheduler' in value)) {
      const count = value.finished.steps.length;
      finished = { done: count, total: count, running: 0 };
      deliverRecorded(value.events, listeners);
      return value.finished;
    }
    current = value.scheduler;
    try {
      await deliver(store, value.scheduler.journal, listeners);
    } catch (error) {
      await value.scheduler.journal.close().catch(() => undefined);
      throw error;
    }
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    if (cancelReason !== undefined) value.scheduler.cancel(cancelReason);
    // A cancel another process recorded in the store (`cancelRun`) reaches the run with its lease.
    value.scheduler.journal.onCancelRequest((request) => cancel(cancelRequestReason(request)));
    try {
      return await value.execute();
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  });
  const idle: RunProgress = { done: 0, total: options.total, running: 0 };
  const revise = async (request: RevisionRequest): Promise<PlanRevision> => {
    const value = await opened;
    if (!('scheduler' in value)) {
      throw new StepwiseError(
        ErrorCodes.INPUT_INVALID,
        `run ${options.runId} has ended: only a running run can be revised`,
        {
          location: options.runId,
        },
      );
    }
    // A session that failed before it began (its listeners refused the journal) never runs: do not wait for it.
    const ended = result.then(() => {
      throw new StepwiseError(
        ErrorCodes.INPUT_INVALID,
        `run ${options.runId} has ended: only a running run can be revised`,
        {
          location: options.runId,
        },
      );
    });
    return Promise.race([value.scheduler.revise(request), ended]);
  };
  return createLazyRunHandle(
    { runId: options.runId, store, journal, result, cancel },
    {
      revise,
      progress: () => current?.progress() ?? finished ?? idle,
      stepStatus: (stepId: string) => current?.stepStatus(stepId),
    },
  );
}

function call(listeners: readonly Listener[], event: RunEvent): void {
  for (const listener of listeners) {
    try {
      listener(event);
    } catch {
      // A listener's bug must not break the run.
    }
  }
}

function deliverRecorded(events: readonly RunEvent[], listeners: readonly Listener[]): void {
  if (listeners.length === 0) return;
  for (const event of events) call(listeners, event);
}

/**
 * Subscribes listeners to the journal. What was journaled before anyone could subscribe (a new
 * run's `run-start`, a resumed run's whole history) is read back from the store and handed over
 * first, so a listener always sees the run from its start; nothing is journaled in between.
 */
async function deliver(store: RunStore, journal: RunJournal, listeners: readonly Listener[]): Promise<void> {
  if (listeners.length === 0) return;
  for await (const event of store.read(journal.runId)) {
    if (event.seq > journal.lastSeq) break;
    call(listeners, event);
  }
  journal.subscribe((event) => call(listeners, event));
}
