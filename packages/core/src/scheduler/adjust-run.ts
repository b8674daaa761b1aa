import { ErrorCodes, toStepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import { cancelledError } from '../kernel/tool-execution.js';
import { type AdjustDecision, type AdjustHook, normalizeAdjustDecision } from './policies/adjust-hook.js';
import type { RunRevisions } from './revise-run.js';
import type { RunLoop } from './run-loop.js';
import type { SessionControl } from './session-control.js';
import { type Slot, StepBoard } from './step-board.js';
import type { Warn } from './step-observer.js';

/** What came of asking the adjust hook. */
export type AdjustOutcome = 'continue' | 'revised' | 'stopped';

/** What asking the adjust hook needs: the hook, the session's board and state, and the revisions. */
export interface AdjustScope {
  readonly hook: AdjustHook;
  readonly journal: RunJournal;
  readonly revisions: Pick<RunRevisions, 'reviseByDecision'>;
  readonly board: Pick<StepBoard, 'plan' | 'outputs' | 'slots'>;
  readonly control: SessionControl;
  readonly warn: Warn;
}

async function ask(scope: AdjustScope, slot: Slot, result: StepResult): Promise<AdjustDecision> {
  const { board, journal } = scope;
  const answer = await scope.hook(slot.step, result, {
    runId: journal.runId,
    plan: board.plan,
    outputs: board.outputs,
    started: board.slots.filter(StepBoard.started).map((each) => each.step.id),
    signal: scope.control.signal,
    journal,
  });
  return normalizeAdjustDecision(answer);
}

/**
 * Asks the policy's adjust hook about a step that ended (before its dependents are released) and
 * journals the decision as `adjust-decision`, followed by the revision it asks for; a hook that
 * throws or answers badly, and a revision that is refused (E001, E005), are journaled with their
 * error and the run goes on unrevised.
 */
export async function adjustAfterStep(scope: AdjustScope, slot: Slot, result: StepResult): Promise<AdjustOutcome> {
  const { journal, control, revisions } = scope;
  const base = {
    type: 'adjust-decision' as const,
    stepId: slot.step.id,
    attempt: result.attempt,
    status: result.status,
  };
  let decision: AdjustDecision;
  try {
    decision = await ask(scope, slot, result);
  } catch (thrown) {
    scope.warn(`adjust hook failed after step "${slot.step.id}"; the run continues`, thrown);
    await journal.record({
      ...base,
      decision: 'continue',
      error: toStepError(thrown, ErrorCodes.INPUT_INVALID),
    });
    return 'continue';
  }
  const reason = decision.reason === undefined ? {} : { reason: decision.reason };
  if (control.stopped && decision.action !== 'continue') {
    // Cancelled or failed while the hook was deciding: the decision is kept, not applied.
    const error = cancelledError(slot.step.id, 'the run stopped before the adjust decision applied');
    const edits = decision.action === 'revise' ? { edits: decision.edits } : {};
    await journal.record({ ...base, decision: decision.action, ...edits, ...reason, error });
    return 'continue';
  }
  if (decision.action === 'continue') {
    await journal.record({ ...base, decision: 'continue', ...reason });
    return 'continue';
  }
  if (decision.action === 'stop') {
    await journal.record({ ...base, decision: 'stop', ...reason });
    const kind = result.status === 'succeeded' ? 'cancelled' : 'failed';
    control.stop(
      kind,
      `the adjust hook stopped the run after step "${slot.step.id}"${decision.reason ? ` (${decision.reason})` : ''}`,
    );
    return 'stopped';
  }
  const revised = await revisions.reviseByDecision(
    { ...base, decision: 'revise', edits: decision.edits, ...reason },
    { edits: decision.edits, by: 'adjust', ...reason },
  );
  return revised ? 'revised' : 'continue';
}

/**
 * A step succeeded: the adjust hook (when the policy has one) decides before its dependents are
 * released, so a revision can put steps in front of them; then the loop advances.
 */
export function adjustThenAdvance(
  adjust: AdjustScope | undefined,
  loop: Pick<RunLoop, 'advance'>,
  slot: Slot,
  result: StepResult,
): Promise<void> | undefined {
  // Without an adjust hook (most engines) there is nothing to wait for: no promise, no turn.
  if (!adjust) {
    loop.advance(slot, result);
    return undefined;
  }
  return adjustAfterStep(adjust, slot, result).then(() => loop.advance(slot, result));
}
