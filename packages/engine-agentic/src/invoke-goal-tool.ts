import { callTool, type ToolCallOutcome } from '@stepwise/core/engine';
import type { GoalStepSession } from './goal-step-session.js';
import { replayedOutcome } from './replay-goal-step.js';

/**
 * Calls one tool for the model through the core kernel (approval, validation, journal), or
 * returns the journaled outcome when a resumed step already ran it. `toolCallId` is the model's
 * id for the call, when the model asked for it (an expectation check is the engine's own call).
 */
export async function invokeGoalTool(
  session: GoalStepSession,
  tool: string,
  args: Record<string, unknown>,
  id: string,
  toolCallId?: string,
): Promise<ToolCallOutcome> {
  const replayed = replayedOutcome(session, id, tool);
  if (replayed) return replayed;
  const { step, attempt, kernel } = session.context;
  const outcome = await callTool(
    {
      stepId: step.id,
      tool,
      args,
      attempt,
      executionId: id,
      turn: session.turn,
      ...(toolCallId === undefined ? {} : { toolCallId }),
      ...(step.requiresApproval ? { requiresApproval: true } : {}),
      ...(step.description ? { description: step.description } : {}),
    },
    kernel,
  );
  // The result is durable before the model hears of it: a crash from here on never repeats the call.
  await kernel.journal.flush();
  return outcome;
}
