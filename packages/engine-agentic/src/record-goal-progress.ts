import type { GoalProgressEvent } from '@stepwise/core/store';
import type { ChatResponse } from './chat-model.js';
import type { DispatchedCalls } from './dispatch-tool-calls.js';
import type { GoalStepSession } from './goal-step-session.js';

/** How much of the model's text a progress event keeps: the model-call event has all of it. */
const NOTE_CHARACTERS = 500;

function decisionOf(response: ChatResponse, calls: DispatchedCalls): GoalProgressEvent['decision'] {
  if (calls.blocked !== undefined) return 'blocked';
  if (calls.completionClaimed) return 'complete';
  return response.toolCalls.length === 0 ? 'analyze' : 'command';
}

function noteOf(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  return trimmed.length > NOTE_CHARACTERS ? `${trimmed.slice(0, NOTE_CHARACTERS - 1)}…` : trimmed;
}

/**
 * Journals where the step stands after the turn the model just took (before the step may end on
 * it), so the live view and the report can follow a long step turn by turn.
 */
export function recordGoalProgress(session: GoalStepSession, response: ChatResponse, calls: DispatchedCalls): void {
  const note = noteOf(response.text);
  const { goals } = session;
  session.context.kernel.journal.emit({
    type: 'goal-progress',
    stepId: session.stepId,
    attempt: session.context.attempt,
    turn: session.turn,
    decision: decisionOf(response, calls),
    ...(note === undefined ? {} : { note }),
    ...(goals === undefined ? {} : { goals }),
    criteria: session.criteria,
    toolCalls: calls.toolCalls,
    toolFailures: session.loop.toolFailures,
  });
}
