import type { StepResult } from '../journal/events.js';
import type { PlanEdit } from '../plan/plan-revision.js';
import type { RecoveryDecision } from './engine-policy.js';
import type { RunRevisions } from './revise-run.js';
import type { Slot } from './step-board.js';

/**
 * The recovery hook chose `insert`: the steps go before the failed one as a plan revision,
 * journaled after the decision; when the step is to be retried, its `dependsOn` gains them.
 * Returns whether the revision applied: a refused insert is journaled with its error, and the
 * caller applies the default failure policy.
 */
export function insertSteps(
  revisions: Pick<RunRevisions, 'reviseByDecision'>,
  slot: Slot,
  result: StepResult,
  decision: Extract<RecoveryDecision, { action: 'insert' }>,
): Promise<boolean> {
  const afterwards = decision.afterwards ?? 'retry';
  const edits: PlanEdit[] = decision.steps.map((step) => ({ op: 'add', step, before: slot.step.id }));
  if (afterwards === 'retry') {
    const dependsOn = [...(slot.step.dependsOn ?? []), ...decision.steps.map((step) => step.id)];
    edits.push({ op: 'edit', stepId: slot.step.id, changes: { dependsOn } });
  }
  const reason = decision.reason === undefined ? {} : { reason: decision.reason };
  return revisions.reviseByDecision(
    {
      type: 'recovery-decision',
      stepId: slot.step.id,
      attempt: result.attempt,
      decision: 'insert',
      steps: decision.steps,
      afterwards,
      ...reason,
    },
    { edits, by: 'recovery', ...reason },
    // Retrying reopens the failed step: the revision may add dependencies to it.
    afterwards === 'retry' ? slot : undefined,
  );
}
