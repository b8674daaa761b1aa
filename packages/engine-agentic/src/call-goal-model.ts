import type { TokenUsage } from '@stepwise/core';
import { addUsage, toStepError } from '@stepwise/core/engine';
import type { ModelCallEvent } from '@stepwise/core/store';
import type { ChatMessage, ChatResponse, ToolChoice } from './chat-model.js';
import { fitContext, promptTokens } from './context-window.js';
import { generateWithRetry } from './generate-with-retry.js';
import type { GoalStepSession, LoopState } from './goal-step-session.js';
import type { TokenEstimator } from './token-estimator.js';

/** What a model call journals as its request, besides the messages sent. */
export interface RecordedRequest {
  readonly attempt: number;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly string[];
  readonly toolChoice: ToolChoice;
  /** Messages added to the conversation since the previous model call: replayed on resume. */
  readonly appended: readonly ChatMessage[];
  readonly loop: LoopState;
  readonly omitted: number;
  readonly promptTokens: number;
}

/** The model's answer as a conversation message. */
export function assistantMessage(response: ChatResponse): ChatMessage {
  return {
    role: 'assistant',
    content: response.text,
    ...(response.toolCalls.length > 0 ? { toolCalls: response.toolCalls } : {}),
  };
}

function estimateUsage(prompt: number, response: ChatResponse, estimator: TokenEstimator): TokenUsage {
  const completion = promptTokens(
    [{ role: 'assistant', content: response.text, toolCalls: response.toolCalls }],
    [],
    estimator,
  );
  return { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion };
}

/**
 * Asks the model for the current turn (the conversation fitted to the context window), with
 * retries for transient errors; every failed try and the answer are journaled as `model-call`.
 */
export async function callGoalModel(session: GoalStepSession): Promise<ChatResponse> {
  const { attempt, kernel, settings } = session.context;
  const { journal } = kernel;
  const { limits, estimator, model } = settings;
  const { definitions } = session.toolset;
  const turn = session.turn;
  const window = fitContext(session.conversation, {
    maxTokens: limits.maxContextTokens,
    toolTokens: session.toolset.tokens,
    estimator,
  });
  const toolChoice: ToolChoice = session.loop.analyseRequired ? 'none' : 'auto';
  const request: RecordedRequest = {
    attempt,
    messages: window.messages,
    tools: definitions.map((definition) => definition.name),
    toolChoice,
    appended: session.appended,
    loop: { ...session.loop },
    omitted: window.omitted,
    promptTokens: window.tokens,
  };
  const record = (outcome: Pick<ModelCallEvent, 'latencyMs' | 'response' | 'usage' | 'error'>) =>
    journal.record({
      type: 'model-call',
      stepId: session.stepId,
      turn,
      model: model.name,
      ...(model.endpoint ? { endpoint: model.endpoint } : {}),
      request,
      ...outcome,
    });
  // The answer's text shows while the model writes it, when someone watches the run live.
  const { live } = journal;
  const onDelta = live.listening ? (text: string) => live.modelDelta(session.stepId, text) : undefined;
  const { response, latencyMs } = await generateWithRetry(
    model,
    { messages: window.messages, tools: definitions, toolChoice, ...(onDelta ? { onDelta } : {}) },
    {
      retry: settings.retry,
      signal: session.signal,
      timeoutMs: settings.modelTimeoutMs,
      random: settings.random,
      onFailure: async ({ error, call, latencyMs: failedLatency, retryInMs }) => {
        const journaled = toStepError(error);
        await record({
          latencyMs: failedLatency,
          error: {
            ...journaled,
            details: { ...journaled.details, call, ...(retryInMs === undefined ? {} : { retryInMs }) },
          },
        });
      },
    },
  ).finally(() => live.endModel(session.stepId));
  const reported = response.usage;
  const callUsage: TokenUsage = reported ?? estimateUsage(window.tokens, response, estimator);
  session.usage = addUsage(session.usage, callUsage);
  // Durable before any tool of this turn runs: resume replays this answer instead of asking again.
  await record({
    response: {
      text: response.text,
      toolCalls: response.toolCalls,
      finishReason: response.finishReason,
      ...(response.model ? { model: response.model } : {}),
      ...(reported ? {} : { usageEstimated: true }),
    },
    usage: callUsage,
    latencyMs,
  });
  session.appended = [];
  return response;
}
