import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunContinueEvent } from '../journal/events.js';
import { applyEvent, type FoldedRun } from '../journal/fold-run.js';
import type { RunJournal } from '../journal/journal.js';
import type { ResumeOptions } from '../run/engine-options.js';

/** What continuing a run asks for, before it is journaled. */
export type Continuation = Omit<RunContinueEvent, 'type' | 'runId' | 'seq' | 'at'>;

/** Ended statuses a run continues from; a completed run has nothing left to do. */
const CONTINUABLE = new Set(['failed', 'partial', 'cancelled', 'waiting']);
/** Step statuses a step may be retried or skipped from. */
const UNFINISHED = new Set(['failed', 'denied', 'cancelled', 'skipped', 'waiting']);

function refuse(runId: string, message: string, location: string): never {
  throw new StepwiseError(ErrorCodes.INPUT_INVALID, `cannot continue run ${runId}: ${message}`, { location });
}

/**
 * Whether a resume continues the run (and how), or `undefined` when it only resumes (a crashed
 * run) or replays (an ended run with nothing asked). A cancelled or waiting run continues without
 * being asked; retry and skip names are checked against the journal (E004 with the step as location).
 */
export function continuationOf(run: FoldedRun, options: ResumeOptions): Continuation | undefined {
  const retry = [...new Set(options.retry ?? [])];
  const skip = [...new Set(options.skip ?? [])];
  const asked = retry.length > 0 || skip.length > 0;
  if (!asked && run.status !== 'cancelled' && run.status !== 'waiting') return undefined;
  if (run.status !== 'running' && !CONTINUABLE.has(run.status)) {
    refuse(run.runId, `it ${run.status}; only failed, partial, cancelled or waiting runs continue`, run.runId);
  }
  for (const stepId of [...retry, ...skip]) {
    const step = run.steps.get(stepId);
    if (!step) refuse(run.runId, `the plan has no step "${stepId}"`, stepId);
    if (!step.result || !UNFINISHED.has(step.result.status)) {
      refuse(
        run.runId,
        `step "${stepId}" is ${step.result?.status ?? step.status}; only a failed, denied, cancelled, waiting or skipped step is retried or skipped`,
        stepId,
      );
    }
    if (retry.includes(stepId) && skip.includes(stepId))
      refuse(run.runId, `step "${stepId}" is both retried and skipped`, stepId);
  }
  return {
    from: run.status,
    retry,
    skip,
    ...(options.by === undefined ? {} : { by: options.by }),
    ...(options.reason === undefined ? {} : { reason: options.reason }),
  };
}

/** Journals `run-continue` under the run's lease and applies it to the fold the resume works from. */
export async function continueRun(journal: RunJournal, run: FoldedRun, continuation: Continuation): Promise<void> {
  const event = await journal.record({ type: 'run-continue', ...continuation });
  applyEvent(run, event);
}
