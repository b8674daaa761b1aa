import { type StepError, toStepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { PlanEdit } from '../plan/plan-revision.js';
import type { RecoveryDecision } from './engine-policy.js';
import type { PreparedRevision, RevisionScope } from './revise-run.js';
import type { Slot } from './step-board.js';

/** What inserting steps needs: the journal and the revisions, under the loop's exclusive section. */
export type InsertScope = RevisionScope;

/**
 * The recovery hook chose `insert`: the steps go before the failed one as a plan revision,
 * journaled after the decision; when the step is to be retried, its `dependsOn` gains them.
 * Returns whether the revision applied: a refused insert is journaled with its error, and the
 * caller applies the default failure policy.
 */
export async function insertSteps(
  scope: InsertScope,
  slot: Slot,
  result: StepResult,
  decision: Extract<RecoveryDecision, { action: 'insert' }>,
): Promise<boolean> {
  const { journal, revisions, loop } = scope;
  const afterwards = decision.afterwards ?? 'retry';
  const edits: PlanEdit[] = decision.steps.map((step) => ({ op: 'add', step, before: slot.step.id }));
  if (afterwards === 'retry') {
    const dependsOn = [...(slot.step.dependsOn ?? []), ...decision.steps.map((step) => step.id)];
    edits.push({ op: 'edit', stepId: slot.step.id, changes: { dependsOn } });
  }
  const reason = decision.reason === undefined ? {} : { reason: decision.reason };
  return loop.exclusive(async () => {
    let prepared: PreparedRevision | undefined;
    let error: StepError | undefined;
    try {
      // Retrying reopens the failed step: the revision may add dependencies to it.
      prepared = revisions.prepare({ edits, by: 'recovery', ...reason }, afterwards === 'retry' ? slot : undefined);
    } catch (thrown) {
      error = toStepError(thrown);
    }
    // Emitted, not flushed: it goes to the store in one append with the plan-revise below, so a
    // crash cannot keep the decision and lose the revision it made.
    journal.emit({
      type: 'recovery-decision',
      stepId: slot.step.id,
      attempt: result.attempt,
      decision: 'insert',
      steps: decision.steps,
      afterwards,
      ...reason,
      ...(error ? { error } : {}),
    });
    if (prepared) await revisions.commit(prepared);
    else await journal.flush();
    return prepared !== undefined;
  });
}
