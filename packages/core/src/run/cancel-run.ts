import { randomUUID } from 'node:crypto';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { cancelRequestReason } from '../journal/cancel-request-listeners.js';
import type { RunResult, StepEndEvent, StepResult } from '../journal/events.js';
import type { StepState } from '../journal/fold-run.js';
import type { JournalKey } from '../journal/journal-chain.js';
import type { CancelRequest, RunStore } from '../journal/run-store.js';
import { cancelledError } from '../kernel/tool-execution.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { finishRun, type ResumedRun, reopenRun } from './run-session.js';

export interface CancelRunOptions {
  /** Who cancels (a person, a service): journaled on the run's `run-end`. */
  readonly by: string;
  readonly reason?: string;
  /** The key the run's hash chain is keyed with (the engine's `journalKey`), for a run this call ends itself. */
  readonly journalKey?: JournalKey;
  /** Lease time-to-live while this call ends a run nobody holds. Default 30 000 ms. */
  readonly leaseTtlMs?: number;
}

/**
 * `requested`: a live process holds the run; the request is recorded in the store and that process
 * (or whoever takes the run over) cancels it at its next lease renewal, within a third of its lease
 * TTL. `cancelled`: nobody held the run (it waited for an answer, its process died, or it was never
 * started); this call ended it `cancelled` and `result` is its result.
 */
export type CancelOutcome =
  | { readonly runId: string; readonly outcome: 'requested'; readonly request: CancelRequest }
  | { readonly runId: string; readonly outcome: 'cancelled'; readonly result: RunResult };

const ENDED = new Set(['completed', 'failed', 'partial', 'cancelled']);
/** Steps that ended for good; `waiting`, `running`, `retrying` and `pending` ones end `cancelled`. */
const STEP_ENDED = new Set(['succeeded', 'failed', 'skipped', 'denied', 'cancelled']);
/** A run changes hands between the look and the request at most this often before we give up (E501). */
const ATTEMPTS = 5;

function runEnded(runId: string, status: string): StepwiseError {
  return new StepwiseError(ErrorCodes.RUN_ENDED, `run ${runId} has ended (${status}): there is nothing to cancel`, {
    location: runId,
    details: { status },
  });
}

function checkOptions(runId: unknown, options: CancelRunOptions): void {
  if (typeof runId !== 'string' || runId.length === 0) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, 'cancelRun needs a run id (a non-empty string)', {
      location: 'runId',
    });
  }
  if (typeof options?.by !== 'string' || options.by.trim() === '') {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `cancel of run ${runId}: say who cancels (by)`, {
      location: 'by',
    });
  }
}

/**
 * Cancels a run from any process that has its store. A run a live process holds is cancelled by that
 * process once it sees the request (`RunStore.requestCancel`; the tools in flight get their signal
 * aborted, the run ends `cancelled`); a run nobody holds (waiting for an answer, crashed, not yet
 * started by a worker) is ended `cancelled` here, under its lease, after the process groups its
 * crashed calls left are killed. Either way its `run-end` names `by`. A later `resume` continues it as
 * any cancelled run. Errors: E505 unknown run, E508 the run has ended, E501 it is held by a process
 * and the store cannot record a request, E507 its journal was changed outside Stepwise.
 */
export async function cancelRun(store: RunStore, runId: string, options: CancelRunOptions): Promise<CancelOutcome> {
  checkOptions(runId, options);
  const request: CancelRequest = {
    by: options.by,
    ...(options.reason === undefined ? {} : { reason: options.reason }),
    at: new Date().toISOString(),
  };
  for (let attempt = 1; ; attempt++) {
    const summary = await store.getRun(runId);
    if (summary && ENDED.has(summary.status)) throw runEnded(runId, summary.status);
    if (summary === undefined) {
      // A run with no journal yet may wait in a store's work queue: the worker that claims it sees the request.
      if (await store.requestCancel?.(runId, request)) return { runId, outcome: 'requested', request };
      throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `no run ${runId} in this store`, { location: runId });
    }
    const reopened = await reopenUnheld(store, runId, options);
    if (reopened) return { runId, outcome: 'cancelled', result: await endCancelled(reopened, request) };
    if (!store.requestCancel) {
      throw new StepwiseError(
        ErrorCodes.LEASE_CONFLICT,
        `run ${runId} is held by a running process and this store cannot record a cancel request; cancel it there`,
        { location: runId },
      );
    }
    if (await store.requestCancel(runId, request)) return { runId, outcome: 'requested', request };
    if (attempt >= ATTEMPTS) {
      throw new StepwiseError(ErrorCodes.LEASE_CONFLICT, `run ${runId} kept changing hands; cancel it again`, {
        location: runId,
        retryable: true,
      });
    }
  }
}

/** The run reopened under a lease of our own, or `undefined` while a live process holds it. */
async function reopenUnheld(
  store: RunStore,
  runId: string,
  options: CancelRunOptions,
): Promise<ResumedRun | undefined> {
  try {
    return await reopenRun({
      store,
      runId,
      owner: `cancel:${process.pid}:${randomUUID()}`,
      leaseTtlMs: options.leaseTtlMs ?? 30_000,
      ...(options.journalKey === undefined ? {} : { journalKey: options.journalKey }),
    });
  } catch (error) {
    if (StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT) return undefined;
    throw error;
  }
}

/** Ends every step that has not ended (or waits) `cancelled`, then the run, as a cancel in its own process would. */
async function endCancelled(reopened: ResumedRun, request: CancelRequest): Promise<RunResult> {
  const { journal, run, plan } = reopened;
  if (ENDED.has(run.status)) {
    await journal.close();
    throw runEnded(run.runId, run.status);
  }
  const reason = cancelRequestReason(request);
  const now = new Date().toISOString();
  const ended = new Map<string, StepResult>();
  for (const step of plan.steps) {
    const state = run.steps.get(step.id);
    if (state && STEP_ENDED.has(state.status)) continue;
    const result = cancelledResult(run.runId, step, state, reason, now);
    const event = journal.emit({ type: 'step-end', stepId: step.id, result });
    ended.set(step.id, (event as StepEndEvent).result);
  }
  const steps = plan.steps
    .map((step) => ended.get(step.id) ?? run.steps.get(step.id)?.result)
    .filter((result): result is StepResult => result !== undefined);
  const startedAt = Date.parse(run.createdAt);
  return finishRun(journal, {
    plan,
    engine: run.engine,
    status: 'cancelled',
    steps,
    durationMs: Number.isNaN(startedAt) ? 0 : Math.max(0, Date.now() - startedAt),
    planDigest: run.planDigest,
    cancel: request,
  });
}

function cancelledResult(
  runId: string,
  step: Plan['steps'][number],
  state: StepState | undefined,
  reason: string,
  now: string,
): StepResult {
  const attempt = Math.max(1, state?.attempt ?? 1);
  return {
    stepId: step.id,
    tool: state?.tool ?? step.tool,
    status: 'cancelled',
    error: cancelledError(step.id, reason),
    executionId: state?.executionId ?? deriveExecutionId(runId, step.id, attempt),
    attempt,
    startedAt: state?.startedAt ?? now,
    durationMs: 0,
  };
}
