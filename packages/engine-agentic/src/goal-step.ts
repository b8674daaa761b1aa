import { ErrorCodes, isStoreError, type StepResult, StepwiseError } from '@stepwise/core';
import { toStepError } from '@stepwise/core/engine';
import { openConversation } from './build-goal-prompt.js';
import { assistantMessage, callGoalModel } from './call-goal-model.js';
import type { ChatResponse } from './chat-model.js';
import { rejectInvalidExpectations } from './check-goal-expectations.js';
import { checkTurnLimits, decideNextTurn } from './decide-next-turn.js';
import { dispatchToolCalls } from './dispatch-tool-calls.js';
import type { GoalStepContext } from './goal-step-context.js';
import { GoalStepSession, type Outcome } from './goal-step-session.js';
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

/**
 * One turn after the model answered: run its calls, journal the progress, decide what comes next.
 * Returns the step's end, or undefined when the loop goes on.
 */
async function takeTurn(session: GoalStepSession, response: ChatResponse): Promise<Outcome | undefined> {
  const calls = await dispatchToolCalls(session, response.toolCalls);
  recordGoalProgress(session, response, calls);
  return decideNextTurn(session, response, calls);
}

/** The loop itself: turn after turn until a phase returns the step's end. */
async function runTurns(session: GoalStepSession): Promise<Outcome> {
  const invalid = rejectInvalidExpectations(session);
  if (invalid) return invalid;
  const replayed = session.context.replay?.modelCalls ?? [];
  let end =
    replayed.length === 0
      ? await openConversation(session)
      : await takeTurn(session, rebuildConversation(session, replayed));
  while (end === undefined) {
    end = checkTurnLimits(session);
    if (end) break;
    session.turn++;
    const response = await callGoalModel(session);
    session.conversation.push(assistantMessage(response));
    end = await takeTurn(session, response);
  }
  return end;
}

/** How a step ends when something was thrown: a stopped signal, a limit the context window hit, the model. */
function outcomeOf(session: GoalStepSession, thrown: unknown): Outcome {
  const { step, kernel, settings } = session.context;
  if (session.signal.aborted) return session.stopped();
  // A store that refuses the journal cannot record a step end either.
  if (isStoreError(thrown)) throw thrown;
  if (StepwiseError.isInstance(thrown)) {
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
  let end: Outcome;
  try {
    end = context.given ?? (await runTurns(session));
  } catch (thrown) {
    end = outcomeOf(session, thrown);
  }
  if (context.settle) {
    try {
      end = await context.settle(end);
    } catch (thrown) {
      end = outcomeOf(session, thrown);
    }
  }
  return session.finish(end);
}
