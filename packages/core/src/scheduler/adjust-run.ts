import { ErrorCodes, type StepError, toStepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import { cancelledError } from '../kernel/tool-execution.js';
import { type AdjustDecision, normalizeAdjustDecision } from './policies/adjust-hook.js';
import { commitRevision, type PreparedRevision, prepareRevision } from './revise-run.js';
import type { RunScheduler } from './run-scheduler.js';
import { type Slot, StepBoard } from './step-board.js';

/** What came of asking the adjust hook. */
export type AdjustOutcome = 'continue' | 'revised' | 'stopped';

async function ask(scheduler: RunScheduler, slot: Slot, result: StepResult): Promise<AdjustDecision> {
  const hook = scheduler.policy.adjust as NonNullable<RunScheduler['policy']['adjust']>;
  const answer = await hook(slot.step, result, {
    runId: scheduler.runId,
    plan: scheduler.board.plan,
    outputs: scheduler.board.outputs,
    started: scheduler.board.slots.filter(StepBoard.started).map((each) => each.step.id),
    signal: scheduler.signal,
    journal: scheduler.journal,
  });
  return normalizeAdjustDecision(answer);
}

/**
 * Asks the policy's adjust hook about a step that ended (before its dependents are released) and
 * journals the decision as `adjust-decision`. A revision is prepared and committed under the
 * scheduler's exclusive section; a hook that throws or answers badly, and a revision that is
 * refused (E001, E005), are journaled with their error and the run goes on unrevised.
 */
export async function adjustAfterStep(scheduler: RunScheduler, slot: Slot, result: StepResult): Promise<AdjustOutcome> {
  const base = {
    type: 'adjust-decision' as const,
    stepId: slot.step.id,
    attempt: result.attempt,
    status: result.status,
  };
  let decision: AdjustDecision;
  try {
    decision = await ask(scheduler, slot, result);
  } catch (thrown) {
    scheduler.log('warn', `adjust hook failed after step "${slot.step.id}"; the run continues`, thrown);
    await scheduler.journal.record({
      ...base,
      decision: 'continue',
      error: toStepError(thrown, ErrorCodes.INPUT_INVALID),
    });
    return 'continue';
  }
  const reason = decision.reason === undefined ? {} : { reason: decision.reason };
  if (scheduler.stopped && decision.action !== 'continue') {
    // Cancelled or failed while the hook was deciding: the decision is kept, not applied.
    const error = cancelledError(slot.step.id, 'the run stopped before the adjust decision applied');
    const edits = decision.action === 'revise' ? { edits: decision.edits } : {};
    await scheduler.journal.record({ ...base, decision: decision.action, ...edits, ...reason, error });
    return 'continue';
  }
  if (decision.action === 'continue') {
    await scheduler.journal.record({ ...base, decision: 'continue', ...reason });
    return 'continue';
  }
  if (decision.action === 'stop') {
    await scheduler.journal.record({ ...base, decision: 'stop', ...reason });
    const kind = result.status === 'succeeded' ? 'cancelled' : 'failed';
    scheduler.stop(
      kind,
      `the adjust hook stopped the run after step "${slot.step.id}"${decision.reason ? ` (${decision.reason})` : ''}`,
    );
    return 'stopped';
  }
  return scheduler.exclusive(async () => {
    let prepared: PreparedRevision | undefined;
    let error: StepError | undefined;
    try {
      prepared = prepareRevision(scheduler, { edits: decision.edits, by: 'adjust', ...reason });
    } catch (thrown) {
      error = toStepError(thrown);
    }
    // Emitted, not flushed: it goes to the store in one append with the plan-revise below, so a
    // crash cannot keep the decision and lose the revision it made.
    scheduler.journal.emit({
      ...base,
      decision: 'revise',
      edits: decision.edits,
      ...reason,
      ...(error ? { error } : {}),
    });
    if (!prepared) {
      await scheduler.journal.flush();
      return 'continue';
    }
    await commitRevision(scheduler, prepared);
    return 'revised';
  });
}
