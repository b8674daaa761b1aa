import { ErrorCodes, type StepResult, StepwiseError, toStepError } from '@stepwise/core';
import { openConversation } from './build-goal-prompt.js';
import { assistantMessage, callGoalModel } from './call-goal-model.js';
import type { ChatResponse } from './chat-model.js';
import { rejectInvalidExpectations } from './check-goal-expectations.js';
import { checkTurnLimits, decideNextTurn } from './decide-next-turn.js';
import { dispatchToolCalls } from './dispatch-tool-calls.js';
import { isTimeoutReason } from './generate-with-retry.js';
import type { GoalStepContext } from './goal-step-context.js';
import { GoalStepSession, type Outcome, StepEnd, stepError } from './goal-step-session.js';
import { ModelError } from './model-error.js';
import { recordGoalProgress } from './record-goal-progress.js';
import { rebuildConversation } from './replay-goal-step.js';

export type {
  CommandToolOptions,
  GoalStepContext,
  LoopSettings,
  ResolvedLimits,
  StepReplay,
} from './goal-step-context.js';

/** One turn after the model answered: run its calls, journal the progress, decide what comes next. */
async function takeTurn(session: GoalStepSession, response: ChatResponse): Promise<void> {
  const calls = await dispatchToolCalls(session, response.toolCalls);
  recordGoalProgress(session, response, calls);
  decideNextTurn(session, response, calls);
}

/** How a step ends when something other than `StepEnd` stopped the loop. */
function outcomeOf(session: GoalStepSession, thrown: unknown): Outcome {
  const { step, kernel, settings } = session.context;
  const { signal } = session;
  if (signal.aborted) {
    const timedOut = isTimeoutReason(signal.reason);
    return {
      status: timedOut ? 'failed' : 'cancelled',
      error: timedOut
        ? stepError(ErrorCodes.STEP_TIMEOUT, `step ${step.id} timed out after ${step.timeoutMs} ms`, step.id)
        : stepError(
            ErrorCodes.STEP_CANCELLED,
            `cancelled: ${signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'run cancelled')}`,
            step.id,
          ),
    };
  }
  if (StepwiseError.isInstance(thrown)) {
    // A store that refuses the journal cannot record a step end either.
    if (thrown.code.startsWith('E5')) throw thrown;
    if (thrown.code === ErrorCodes.TOKEN_BUDGET) {
      const value = settings.limits.maxContextTokens;
      kernel.journal.emit({ type: 'limit-reach', stepId: step.id, limit: 'token-budget', value });
    }
    return { status: 'failed', error: { ...toStepError(thrown), location: step.id } };
  }
  if (thrown instanceof ModelError) return { status: 'failed', error: toStepError(thrown) };
  return { status: 'failed', error: { ...toStepError(thrown, ErrorCodes.MODEL_ERROR), location: step.id } };
}

/**
 * Runs one goal step: the model picks tools turn by turn until it completes (checked against
 * `expect`), reports the step blocked, or a limit is hit. Every tool call goes through the core
 * kernel; every model turn is journaled before its tool calls run, and the step's progress after
 * it. With `replay`, the journaled turns rebuild the conversation and the step continues after
 * the last completed turn.
 */
export async function runGoalStep(context: GoalStepContext): Promise<StepResult> {
  const session = new GoalStepSession(context);
  try {
    rejectInvalidExpectations(session);
    const replayed = context.replay?.modelCalls ?? [];
    if (replayed.length === 0) await openConversation(session);
    else await takeTurn(session, rebuildConversation(session, replayed));
    while (true) {
      checkTurnLimits(session);
      session.turn++;
      const response = await callGoalModel(session);
      session.conversation.push(assistantMessage(response));
      await takeTurn(session, response);
    }
  } catch (thrown) {
    if (thrown instanceof StepEnd) return session.finish(thrown.outcome);
    return session.finish(outcomeOf(session, thrown));
  }
}
