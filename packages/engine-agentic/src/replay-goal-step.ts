import { ErrorCodes } from '@stepwise/core';
import { addUsage, type ToolCallOutcome } from '@stepwise/core/engine';
import type { ModelCallEvent } from '@stepwise/core/store';
import { assistantMessage, type RecordedRequest } from './call-goal-model.js';
import type { ChatResponse } from './chat-model.js';
import { type GoalStepSession, render, stepError } from './goal-step-session.js';

/**
 * Rebuilds the conversation of a resumed step from its journaled model calls and restores the
 * loop counters and turn. Returns the last answer: its turn is processed again, its completed
 * tool calls replayed from their journaled results (see `replayedOutcome`).
 */
export function rebuildConversation(session: GoalStepSession, replayed: readonly ModelCallEvent[]): ChatResponse {
  const executions = session.context.replay?.executions;
  const last = replayed.at(-1) as ModelCallEvent;
  for (const event of replayed) {
    const recorded = event.request as RecordedRequest;
    const response = event.response as ChatResponse;
    session.conversation.push(...recorded.appended);
    session.conversation.push(assistantMessage(response));
    session.usage = addUsage(session.usage, event.usage);
    if (event === last) continue;
    // Earlier turns' results stay available to output_matches; the last turn is processed again.
    for (const index of response.toolCalls.keys()) {
      const execution = executions?.get(session.callId(event.turn, index));
      if (execution?.status === 'succeeded') session.toolOutputs.push(render(execution.output));
    }
  }
  Object.assign(session.loop, (last.request as RecordedRequest).loop);
  session.turn = last.turn;
  session.appended = [];
  return last.response as ChatResponse;
}

/** The journaled outcome of a call a crash interrupted, or undefined when it has to run (again). */
export function replayedOutcome(session: GoalStepSession, id: string, tool: string): ToolCallOutcome | undefined {
  const execution = session.context.replay?.executions.get(id);
  if (execution) {
    if (execution.status === 'succeeded' || execution.status === 'failed') {
      return {
        status: execution.status,
        output: execution.output,
        ...(execution.error ? { error: execution.error } : {}),
        artifacts: execution.artifacts,
        executionId: id,
        durationMs: execution.durationMs ?? 0,
        called: true,
      };
    }
    if (execution.idempotent || session.context.settings.allowRerunInterrupted) return undefined;
    // Started, never finished, not safe to repeat: close the record and let the model find out.
    const error = stepError(
      ErrorCodes.STEP_INTERRUPTED,
      `${tool} was running when the run stopped; it may or may not have taken effect and was not run again`,
      session.stepId,
    );
    session.context.kernel.journal.emit({
      type: 'tool-result',
      stepId: session.stepId,
      executionId: id,
      tool: execution.tool,
      status: 'failed',
      error,
      startedAt: execution.startedAt,
      durationMs: 0,
    });
    return { status: 'failed', error, artifacts: [], executionId: id, durationMs: 0, called: true };
  }
  const approval = session.approvals.get(id);
  if (approval && approval.decision !== 'approved') {
    const status = approval.decision === 'skipped' ? 'skipped' : 'denied';
    return {
      status,
      error: stepError(
        ErrorCodes.APPROVAL_DENIED,
        `${tool} was ${status}${approval.reason ? `: ${approval.reason}` : ''}`,
        session.stepId,
      ),
      artifacts: [],
      executionId: id,
      durationMs: 0,
      called: false,
    };
  }
  return undefined;
}
