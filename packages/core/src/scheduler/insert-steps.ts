import { type StepError, toStepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { PlanEdit } from '../plan/plan-revision.js';
import type { RecoveryDecision } from './engine-policy.js';
import { commitRevision, type PreparedRevision, prepareRevision } from './revise-run.js';
import type { RunScheduler } from './run-scheduler.js';
import type { Slot } from './step-board.js';

/**
 * The recovery hook chose `insert`: the steps go before the failed one as a plan revision
 * (journaled after the decision); then the step is retried once they succeeded (its `dependsOn`
 * gains them), or skipped. A refused insert is journaled with its error and the default failure
 * policy applies.
 */
export async function insertSteps(
  scheduler: RunScheduler,
  slot: Slot,
  result: StepResult,
  decision: Extract<RecoveryDecision, { action: 'insert' }>,
): Promise<void> {
  const afterwards = decision.afterwards ?? 'retry';
  const edits: PlanEdit[] = decision.steps.map((step) => ({ op: 'add', step, before: slot.step.id }));
  if (afterwards === 'retry') {
    const dependsOn = [...(slot.step.dependsOn ?? []), ...decision.steps.map((step) => step.id)];
    edits.push({ op: 'edit', stepId: slot.step.id, changes: { dependsOn } });
  }
  const reason = decision.reason === undefined ? {} : { reason: decision.reason };
  const applied = await scheduler.exclusive(async () => {
    let prepared: PreparedRevision | undefined;
    let error: StepError | undefined;
    try {
      // Retrying reopens the failed step: the revision may add dependencies to it.
      prepared = prepareRevision(
        scheduler,
        { edits, by: 'recovery', ...reason },
        afterwards === 'retry' ? slot : undefined,
      );
    } catch (thrown) {
      error = toStepError(thrown);
    }
    // Emitted, not flushed: it goes to the store in one append with the plan-revise below, so a
    // crash cannot keep the decision and lose the revision it made.
    scheduler.journal.emit({
      type: 'recovery-decision',
      stepId: slot.step.id,
      attempt: result.attempt,
      decision: 'insert',
      steps: decision.steps,
      afterwards,
      ...reason,
      ...(error ? { error } : {}),
    });
    if (prepared) await commitRevision(scheduler, prepared);
    else await scheduler.journal.flush();
    return prepared !== undefined;
  });
  if (!applied || scheduler.stopped) {
    await scheduler.conclude(slot, result, `step "${slot.step.id}" failed`);
  } else if (afterwards === 'skip') {
    await scheduler.skipByDecision(slot, result, decision.reason);
  } else {
    slot.recoveries++;
    if (slot.remaining === 0) scheduler.enqueue(slot, result.attempt + 1);
    else slot.status = 'blocked';
  }
}
