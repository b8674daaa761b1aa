import type { RecoveryDecisionEvent, RunEvent, StepResult } from '../journal/events.js';
import type { FoldedRun, StepState } from '../journal/fold-run.js';
import { type InterruptedAction, interruptedAction } from '../run/run-session.js';

/** What the journal says about one step, turned into what the resumed session does with it. */
export interface RestoredStep {
  /** The last attempt started (0: never). */
  readonly attempt: number;
  /** Args the recovery hook substituted for later attempts. */
  readonly args: Record<string, unknown> | undefined;
  /** The step ended: its result stands (outputs of succeeded steps feed references again). */
  readonly result?: StepResult;
  /**
   * `rerun`: it was in flight and may run again; `finish`: its tool result is journaled, only the end is missing;
   * `fail`: in flight, not idempotent (E309); `reconcile`: in flight, not idempotent, its tool is asked; `retry`: it waited for a retry; `skip`: the hook chose skip.
   */
  readonly action?: InterruptedAction | 'retry' | 'skip';
  readonly executionId?: string;
  readonly startedAt?: string;
  readonly toolResult?: StepState['toolResult'];
  /** The recovery hook aborted the run at this step. */
  readonly aborted?: boolean;
  /** A goal step's attempt continues (same attempt, its journaled turns replayed) instead of a new one. */
  readonly continueAttempt?: boolean;
  /** For `skip`: the failed result the hook (or a person continuing the run) decided on. */
  readonly failure?: StepResult;
  /** For `skip`: who chose it (default the recovery hook). */
  readonly by?: 'hook' | 'person';
  readonly reason?: string;
}

export interface ResumeState {
  readonly steps: ReadonlyMap<string, RestoredStep>;
  /** Steps that were in flight, as `run-resume` journals them. */
  readonly interrupted: { stepId: string; action: InterruptedAction }[];
}

/**
 * Reads a folded run (and its recovery decisions) into per-step instructions for the resumed session.
 * `reconciles` says whether the named tool has a `reconcile` (see `interruptedAction`).
 */
export function restoreSteps(
  run: FoldedRun,
  events: readonly RunEvent[],
  allowRerun: boolean,
  reconciles?: (tool: string) => boolean,
): ResumeState {
  const decisions = new Map<string, RecoveryDecisionEvent>();
  const retryArgs = new Map<string, Record<string, unknown>>();
  for (const event of events) {
    if (event.type !== 'recovery-decision') continue;
    decisions.set(event.stepId, event);
    if (event.decision === 'retry' && event.args) retryArgs.set(event.stepId, event.args);
  }
  const steps = new Map<string, RestoredStep>();
  const interrupted: ResumeState['interrupted'] = [];
  for (const step of run.plan?.steps ?? []) {
    const state = run.steps.get(step.id);
    const base = { attempt: state?.attempt ?? 0, args: retryArgs.get(step.id) };
    if (state?.status === 'pending' && state.continueAttempt) {
      // A goal step that waited for a person's answer goes on with the attempt it asked in.
      steps.set(step.id, { ...base, action: 'rerun', continueAttempt: true });
    } else if (!state || state.status === 'pending') {
      steps.set(step.id, base);
    } else if (state.status === 'running') {
      // A goal step continues its attempt after its last journaled turn: nothing that finished runs again.
      const goal = step.tool === undefined;
      // A tool that was aborted left a `cancelled` result, which is no result to finish with.
      const action = goal
        ? 'rerun'
        : interruptedAction(
            state.toolResult?.status === 'cancelled' ? { ...state, toolResult: undefined } : state,
            allowRerun,
            reconciles,
          );
      interrupted.push({ stepId: step.id, action });
      steps.set(step.id, {
        ...base,
        action,
        ...(goal ? { continueAttempt: true } : {}),
        ...(state.executionId ? { executionId: state.executionId } : {}),
        ...(state.startedAt ? { startedAt: state.startedAt } : {}),
        ...(state.toolResult ? { toolResult: state.toolResult } : {}),
      });
    } else if (state.status === 'retrying') {
      steps.set(step.id, { ...base, action: 'retry' });
    } else if (state.result && state.skipRequest) {
      steps.set(step.id, {
        ...base,
        action: 'skip',
        failure: state.result,
        by: 'person',
        ...(state.skipRequest.reason ? { reason: state.skipRequest.reason } : {}),
      });
    } else if (state.result) {
      const decision = decisions.get(step.id);
      const decided = state.result.status === 'failed' && decision?.attempt === state.result.attempt;
      // An insert that was refused (error) left the default policy in charge: the result stands.
      const inserted = decided && decision.decision === 'insert' && !decision.error;
      const retried = decision?.decision === 'retry' || (inserted && decision?.afterwards !== 'skip');
      const skipped = decision?.decision === 'skip' || (inserted && decision?.afterwards === 'skip');
      if (decided && retried) steps.set(step.id, { ...base, action: 'retry' });
      else if (decided && skipped)
        steps.set(step.id, {
          ...base,
          action: 'skip',
          failure: state.result,
          ...(decision.reason ? { reason: decision.reason } : {}),
        });
      else
        steps.set(step.id, {
          ...base,
          result: state.result,
          ...(decided && decision.decision === 'abort' ? { aborted: true } : {}),
        });
    } else {
      steps.set(step.id, base);
    }
  }
  return { steps, interrupted };
}
