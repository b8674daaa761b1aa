import { ErrorCodes } from '@stepwise/core';
import type { ToolCallOutcome } from '@stepwise/core/engine';
import {
  type CompleteStepArguments,
  CompleteStepSchema,
  isBuiltInTool,
  REPORT_BLOCKED,
  ReportBlockedSchema,
} from './built-in-tools.js';
import type { ChatMessage, ChatToolCall } from './chat-model.js';
import { checkCompletion } from './check-goal-expectations.js';
import { truncateText } from './context-window.js';
import { type GoalStepSession, render } from './goal-step-session.js';
import { invokeGoalTool } from './invoke-goal-tool.js';

/** What the tool calls of one model answer came to. */
export interface DispatchedCalls {
  /** The accepted `complete_step`: the step succeeds. */
  completion: CompleteStepArguments | undefined;
  /** The reason of a `report_blocked`: the step fails. */
  blocked: string | undefined;
  /** A well-formed `complete_step` was made, accepted or not. */
  completionClaimed: boolean;
  /** Calls of registered tools the model asked for (run or refused). */
  toolCalls: number;
}

function toolMessage(call: ChatToolCall, content: string): ChatMessage {
  return { role: 'tool', toolCallId: call.id, name: call.name, content };
}

/** What the model reads about a finished call; large results are cut, the full text kept as an artifact. */
function describeOutcome(session: GoalStepSession, outcome: ToolCallOutcome): string {
  const { limits, estimator } = session.context.settings;
  let text: string;
  if (outcome.status === 'succeeded') {
    text = render(outcome.output);
    session.toolOutputs.push(text);
  } else if (outcome.status === 'waiting') {
    // Approval mode `pause` inside a goal step: the call cannot wait for a person mid-loop.
    text = `NOT RUN: this call needs a person's approval, which is not asked during a goal step. Do not repeat it; find another way or call report_blocked with what you need.`;
  } else if (outcome.status === 'denied' || outcome.status === 'skipped') {
    text = `DENIED: ${outcome.error?.message ?? 'denied by user'}. The call was not run. Do not repeat it; find another way or call report_blocked.`;
  } else {
    const error = outcome.error;
    text = `ERROR ${error?.code ?? ErrorCodes.TOOL_FAILED}: ${error?.message ?? 'the tool failed'}${error?.details ? `\n${render(error.details)}` : ''}`;
  }
  const cut = truncateText(text, limits.maxToolResultTokens, estimator);
  if (cut.omittedTokens > 0) {
    session.artifacts.push({ kind: 'tool_output', name: outcome.executionId, content: text, mediaType: 'text/plain' });
  }
  return cut.text;
}

/** `complete_step` or `report_blocked`: the model ends the step (a completion only once its criteria hold). */
async function endingCall(session: GoalStepSession, call: ChatToolCall, id: string, calls: DispatchedCalls) {
  if (calls.completion || calls.blocked) {
    session.push(toolMessage(call, 'Ignored: the step already ended in this turn.'));
    return;
  }
  if (call.parseError) {
    session.loop.toolFailures++;
    session.push(toolMessage(call, `ERROR ${ErrorCodes.ARGUMENTS_INVALID}: ${call.parseError}`));
    return;
  }
  if (call.name === REPORT_BLOCKED) {
    const parsed = ReportBlockedSchema.safeParse(call.arguments);
    if (parsed.success && parsed.data.goals) session.goals = parsed.data.goals;
    calls.blocked = parsed.success ? parsed.data.reason : 'the model reported the step blocked without a reason';
    session.push(toolMessage(call, 'Noted: the step is blocked.'));
    return;
  }
  const parsed = CompleteStepSchema.safeParse(call.arguments);
  if (!parsed.success) {
    session.loop.toolFailures++;
    session.push(toolMessage(call, `ERROR ${ErrorCodes.ARGUMENTS_INVALID}: complete_step needs { summary: string }`));
    return;
  }
  calls.completionClaimed = true;
  if (parsed.data.goals) session.goals = parsed.data.goals;
  const missing = await checkCompletion(session, parsed.data, id);
  if (missing.length > 0) {
    session.push(
      toolMessage(
        call,
        `Not accepted: the step's expected outcome does not hold yet.\n${missing.map((item) => `- ${item}`).join('\n')}\nKeep working, then call complete_step again.`,
      ),
    );
    return;
  }
  calls.completion = parsed.data;
  session.push(toolMessage(call, 'Accepted: the step is complete.'));
}

/** A registered tool: run through the kernel unless the model must analyse first or the call is malformed. */
async function registeredCall(session: GoalStepSession, call: ChatToolCall, id: string, analyseRequired: boolean) {
  if (analyseRequired) {
    session.push(toolMessage(call, 'Not run: analyse the results so far before calling more tools.'));
    return;
  }
  const { loop } = session;
  loop.consecutiveToolCalls++;
  if (call.parseError) {
    loop.toolFailures++;
    session.push(
      toolMessage(
        call,
        `ERROR ${ErrorCodes.ARGUMENTS_INVALID}: ${call.parseError}. Send the arguments as a JSON object.`,
      ),
    );
    return;
  }
  const { allowed } = session.toolset;
  if (!allowed.has(call.name)) {
    loop.toolFailures++;
    session.push(
      toolMessage(
        call,
        `ERROR ${ErrorCodes.TOOL_UNKNOWN}: there is no tool "${call.name}" in this step. Available: ${[...allowed].join(', ')}.`,
      ),
    );
    return;
  }
  const outcome = await invokeGoalTool(session, call.name, call.arguments, id, call.id);
  if (outcome.status === 'cancelled') throw session.signal.reason;
  if (outcome.status !== 'succeeded') loop.toolFailures++;
  session.push(toolMessage(call, describeOutcome(session, outcome)));
}

/**
 * Carries out the tool calls of one model answer in order, answering each with a tool message.
 * Whether the analysis rule applies is decided once, before the first call.
 */
export async function dispatchToolCalls(
  session: GoalStepSession,
  toolCalls: readonly ChatToolCall[],
): Promise<DispatchedCalls> {
  const calls: DispatchedCalls = { completion: undefined, blocked: undefined, completionClaimed: false, toolCalls: 0 };
  const analyseRequired = session.loop.analyseRequired;
  for (const [index, call] of toolCalls.entries()) {
    const id = session.callId(session.turn, index);
    if (isBuiltInTool(call.name)) {
      await endingCall(session, call, id, calls);
    } else {
      calls.toolCalls++;
      await registeredCall(session, call, id, analyseRequired);
    }
  }
  return calls;
}
