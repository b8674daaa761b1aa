import type { StepError } from '../errors.js';
import { endStep, type KernelContext } from '../kernel/invoke-step.js';
import { type ReconcileOutcome, reconcileCall } from '../kernel/reconcile-call.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import { interruptedError } from '../run/run-session.js';
import { adjustThenAdvance } from './adjust-run.js';
import type { RestoreScope } from './restore-session.js';
import type { RestoredStep } from './resume-state.js';
import type { Slot } from './step-board.js';

/**
 * A step a crash left in flight whose tool can reconcile: its tool is asked whether the call's
 * effect happened. `done` ends the step with the output it gives, `not-done` runs a new attempt
 * (the same idempotency key), `unknown` fails it as interrupted (E309) and the failure policy
 * takes over, as for any interrupted non-idempotent step.
 */
export async function reconcileStep(scope: RestoreScope, slot: Slot, state: RestoredStep): Promise<void> {
  const { journal, kernel } = scope;
  slot.status = 'running';
  const executionId = state.executionId ?? deriveExecutionId(journal.runId, slot.step.id, state.attempt);
  const execution = scope.resumed?.executions.get(executionId);
  const tool = execution ? kernel?.registry.get(execution.tool) : undefined;
  const started = performance.now();
  let answer: ReconcileOutcome | undefined;
  if (kernel && execution && tool) {
    const request = {
      stepId: slot.step.id,
      tool,
      args: execution.args,
      attempt: state.attempt,
      executionId,
      revision: scope.board.plan.revision ?? 0,
    };
    answer = await reconcileCall(request, kernel as KernelContext);
  }
  if (answer?.answer === 'not-done') {
    scope.loop.enqueue(slot, state.attempt + 1);
    return;
  }
  const error: StepError = answer?.answer === 'unknown' ? answer.error : interruptedError(slot.step.id);
  const outcome = answer?.answer === 'done' ? answer.outcome : { status: 'failed' as const, error, artifacts: [] };
  const startedAt = state.startedAt ?? new Date().toISOString();
  const result = await endStep(slot.step, state.attempt, executionId, startedAt, started, outcome, { journal });
  if (result.status === 'succeeded') await adjustThenAdvance(scope.adjust, scope.loop, slot, result);
  else await scope.failures.recover(slot, result);
}
