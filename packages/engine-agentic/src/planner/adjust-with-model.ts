import {
  type AdjustContext,
  type AdjustDecision,
  type AdjustHook,
  ErrorCodes,
  type FunctionDefinition,
  type Step,
  type StepResult,
  StepwiseError,
  type ToolRegistry,
} from '@stepwise/core';
import { normalizeAdjustDecision, toStepError } from '@stepwise/core/engine';
import type { ChatMessage, ChatModel, ChatResponse } from '../chat-model.js';
import { DEFAULT_MODEL_RETRY, generateWithRetry, type ModelRetryOptions } from '../generate-with-retry.js';
import { PlannerError, PlannerErrorCodes } from './planner-error.js';
import { jsonObjectFromText } from './read-plan-answer.js';

/** The function the model calls with its decision. */
export const ADJUST_PLAN = 'adjust_plan';

export const ADJUST_SYSTEM_PROMPT = [
  'You supervise a plan while it runs. A step has just ended; decide what happens next by calling adjust_plan:',
  '- {"action":"continue"} when the plan still fits;',
  '- {"action":"revise","edits":[...]} to change steps that have not started: {"op":"add","step":{...},"before"|"after":"<id>"},',
  '  {"op":"replace","step":{...}}, {"op":"edit","stepId":"<id>","changes":{...}}, {"op":"remove","stepId":"<id>"};',
  '- {"action":"stop"} when going on would do harm or is pointless.',
  'Started steps can never change. Give a short "reason".',
].join('\n');

export interface AdjustWithModelOptions {
  readonly model: ChatModel;
  /** Shown to the model so new steps call real tools (names and argument schemas). Default: none shown. */
  readonly tools?: ToolRegistry;
  /** `failure`: ask only after a step fails (the default: a model call per step is costly); `always`: after every step. */
  readonly when?: 'failure' | 'always';
  /** Extra facts for the model, placed after the step's outcome. */
  readonly context?: string;
  readonly systemPrompt?: string;
  /** Transient model errors are retried with backoff (same defaults as the agentic engine). */
  readonly retry?: ModelRetryOptions;
  readonly modelTimeoutMs?: number;
}

function adjustFunction(): FunctionDefinition {
  return {
    name: ADJUST_PLAN,
    description: 'Decide what the running plan does next.',
    parameters: {
      type: 'object',
      properties: {
        action: { type: 'string', enum: ['continue', 'revise', 'stop'] },
        reason: { type: 'string' },
        edits: { type: 'array', items: { type: 'object' } },
      },
      required: ['action'],
    },
  };
}

function outcomeMessage(
  step: Step,
  result: StepResult,
  context: AdjustContext,
  options: AdjustWithModelOptions,
): string {
  const lines = [
    `Step "${step.id}" ${result.status} (attempt ${result.attempt}).`,
    result.error ? `Its error: ${result.error.code} ${result.error.message}` : '',
    result.status === 'succeeded' ? `Its output: ${JSON.stringify(result.output ?? null).slice(0, 2000)}` : '',
    `The plan now (revision ${context.plan.revision ?? 0}): ${JSON.stringify(context.plan)}`,
    `Steps that have started and may not change: ${context.started.join(', ') || 'none'}.`,
    options.tools ? `Tools new steps may call: ${JSON.stringify(options.tools.toFunctionDefinitions())}` : '',
    options.context ?? '',
  ];
  return lines.filter((line) => line !== '').join('\n');
}

/** The decision in an answer: the `adjust_plan` call's arguments, else a JSON object in the text (E408 when neither). */
function readDecision(response: ChatResponse): AdjustDecision {
  const call = response.toolCalls.find((candidate) => candidate.name === ADJUST_PLAN);
  if (call?.parseError !== undefined) {
    throw new PlannerError(
      PlannerErrorCodes.ANSWER_NOT_JSON,
      `the ${ADJUST_PLAN} arguments are not JSON: ${call.parseError}`,
      {
        location: `/${ADJUST_PLAN}`,
      },
    );
  }
  const candidate = call ? call.arguments : jsonObjectFromText(response.text);
  if (candidate === undefined) {
    const preview = response.text.trim().slice(0, 120);
    throw new PlannerError(
      PlannerErrorCodes.ANSWER_NOT_JSON,
      `the model's adjust answer is not JSON${preview ? `: "${preview}"` : ' (empty)'}`,
      { location: '/' },
    );
  }
  return normalizeAdjustDecision(candidate);
}

/**
 * An adjust hook that asks `model`: after a step ends (by default only after a failure), the model
 * sees the step's outcome, the plan as it is and the steps it may not touch, and answers with an
 * `adjust_plan` call (or JSON text). Each call is journaled as a `model-call` of the step (purpose
 * `adjust`). Throws E408 when the answer holds no JSON and E004 when it is not a decision; the
 * scheduler journals either with the `adjust-decision` and the run goes on unrevised.
 */
export function adjustWithModel(options: AdjustWithModelOptions): AdjustHook {
  if (!options?.model || typeof options.model.generate !== 'function') {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'adjustWithModel needs { model }, a ChatModel', {
      location: 'model',
    });
  }
  const when = options.when ?? 'failure';
  return async (step, result, context) => {
    if (when === 'failure' && result.status !== 'failed') return undefined;
    const messages: ChatMessage[] = [
      { role: 'system', content: options.systemPrompt ?? ADJUST_SYSTEM_PROMPT },
      { role: 'user', content: outcomeMessage(step, result, context, options) },
    ];
    const record = (outcome: Record<string, unknown>) =>
      context.journal.record({
        type: 'model-call',
        stepId: step.id,
        attempt: result.attempt,
        turn: 0,
        model: options.model.name,
        ...(options.model.endpoint ? { endpoint: options.model.endpoint } : {}),
        request: { purpose: 'adjust', messages },
        latencyMs: 0,
        ...outcome,
      });
    const { response, latencyMs } = await generateWithRetry(
      options.model,
      { messages, tools: [adjustFunction()], toolChoice: 'auto' },
      {
        retry: { ...DEFAULT_MODEL_RETRY, ...options.retry },
        signal: context.signal,
        timeoutMs: options.modelTimeoutMs,
        random: Math.random,
        onFailure: async ({ error, latencyMs: spent }) => {
          await record({ latencyMs: spent, error: toStepError(error) });
        },
      },
    );
    await record({
      latencyMs,
      response: { text: response.text, toolCalls: response.toolCalls, finishReason: response.finishReason },
      ...(response.usage ? { usage: response.usage } : {}),
    });
    return readDecision(response);
  };
}
