import {
  type EngineKind,
  ErrorCodes,
  type Plan,
  type PlanProblem,
  type TokenUsage,
  type ToolRegistry,
  validatePlan,
} from '@stepwise/core';
import { addUsage, type RunJournal, toStepError } from '@stepwise/core/engine';
import { type ModelCallEvent, sha256 } from '@stepwise/core/store';
import type { ChatMessage, ChatModel, ChatResponse } from '../chat-model.js';
import { DEFAULT_MODEL_RETRY, generateWithRetry, type ModelRetryOptions } from '../generate-with-retry.js';
import { PlannerError, PlannerErrorCodes } from './planner-error.js';
import { goalMessage, PLANNER_SYSTEM_PROMPT, problemsMessage, submitPlanDefinition } from './planner-prompt.js';
import { type PlanAnswer, readPlanAnswer } from './read-plan-answer.js';

export interface PlanFromGoalOptions {
  /** What the plan should achieve; becomes the plan's `goal` when the model leaves it out. */
  readonly goal: string;
  /** The tools the plan may call: shown to the model and checked by `validatePlan` (names and args). */
  readonly tools: ToolRegistry;
  readonly model: ChatModel;
  /** Extra facts for the model (repository layout, constraints), placed after the goal. */
  readonly context?: string;
  /** Rejected plans sent back for repair before giving up. Default 2 (so at most 3 model answers). */
  readonly maxRepairs?: number;
  /** Validation rules of the engine that will run the plan. Default `dag`; `agentic` allows goal steps. */
  readonly engine?: EngineKind;
  /** When given, every model call is journaled as a `model-call` event. */
  readonly journal?: RunJournal;
  /** The `stepId` of those events. Default `plan`. */
  readonly stepId?: string;
  /** Default: the engine's instructions for plans. */
  readonly systemPrompt?: string;
  readonly signal?: AbortSignal;
  /**
   * Replaces the default check (`validatePlan` with `tools` and `engine`) of each answer; its
   * problems go back to the model like validation problems. `replanRemaining` uses it.
   */
  readonly check?: (candidate: unknown) => PlanCheck;
  /** Transient model errors are retried with backoff (same defaults as the agentic engine). */
  readonly retry?: ModelRetryOptions;
  /** Per model call. Default none. */
  readonly modelTimeoutMs?: number;
}

/** The verdict on one answer: the accepted plan, or every problem to send back. */
export type PlanCheck =
  | { readonly ok: true; readonly plan: Plan; readonly order: readonly string[] }
  | { readonly ok: false; readonly problems: readonly PlanProblem[] };

/** One model call of the planner, as it is journaled. */
export interface PlannerCall {
  /** 0 for the first answer, then one per repair. */
  readonly turn: number;
  readonly messages: readonly ChatMessage[];
  readonly response: ChatResponse;
  readonly latencyMs: number;
  /** The problems found in this answer; empty for the accepted plan. */
  readonly problems: readonly PlanProblem[];
}

export interface PlanFromGoalResult {
  /** Valid for the tools and engine given. */
  readonly plan: Plan;
  /** Topological order of the step ids, as `validatePlan` returned it. */
  readonly order: readonly string[];
  /** Every model call, the accepted one last. */
  readonly calls: readonly PlannerCall[];
  readonly usage: TokenUsage | undefined;
}

/**
 * Asks the model for a plan that reaches `goal` with `tools`, as structured output: a `submit_plan`
 * call whose parameters are the plan's JSON Schema (or JSON text, for models without tools). Each
 * answer is checked with `validatePlan`; a rejected one goes back to the model with every problem
 * (code, JSON path, message) until the plan is valid or `maxRepairs` is spent.
 * Throws `PlannerError` E408 when the last answer held no JSON, E409 when the plan still has problems,
 * and the model's `ModelError` (E407) when the endpoint keeps failing.
 */
export async function planFromGoal(options: PlanFromGoalOptions): Promise<PlanFromGoalResult> {
  const maxRepairs = options.maxRepairs ?? 2;
  if (!Number.isInteger(maxRepairs) || maxRepairs < 0) {
    throw new PlannerError(
      ErrorCodes.CONFIG_INVALID,
      `maxRepairs must be a whole number ≥ 0, not ${String(maxRepairs)}`,
      {
        location: 'maxRepairs',
      },
    );
  }
  const engine = options.engine ?? 'dag';
  const submitPlan = submitPlanDefinition();
  const conversation: ChatMessage[] = [
    { role: 'system', content: options.systemPrompt ?? PLANNER_SYSTEM_PROMPT },
    {
      role: 'user',
      content: goalMessage(options.goal, options.tools.toFunctionDefinitions(), {
        ...(options.context === undefined ? {} : { context: options.context }),
        goalSteps: engine === 'agentic',
      }),
    },
  ];
  const calls: PlannerCall[] = [];
  let usage: TokenUsage | undefined;
  let last: PlanAnswer | undefined;
  let lastProblems: readonly PlanProblem[] = [];

  for (let turn = 0; turn <= maxRepairs; turn++) {
    const messages = [...conversation];
    const { response, latencyMs } = await callModel(options, messages, turn, submitPlan);
    usage = addUsage(usage, response.usage);
    last = readPlanAnswer(response);
    const candidate = last.ok ? withDefaults(last.candidate, options.goal) : undefined;
    const validation = last.ok
      ? (options.check?.(candidate) ?? validatePlan(candidate, { tools: options.tools, engine }))
      : undefined;
    lastProblems = validation ? (validation.ok ? [] : validation.problems) : last.ok ? [] : [last.problem];
    calls.push({ turn, messages, response, latencyMs, problems: lastProblems });
    await journalCall(options, turn, messages, answeredCall(calls[calls.length - 1] as PlannerCall));
    if (validation?.ok) return { plan: validation.plan, order: validation.order, calls, usage };
    conversation.push(...feedback(response, lastProblems));
  }

  const answers = calls.length;
  // The calls go with the error: a host that plans before its run exists can still journal them.
  const details = { attempts: answers, problems: lastProblems, lastAnswer: calls.at(-1)?.response.text ?? '', calls };
  if (last && !last.ok) {
    throw new PlannerError(
      PlannerErrorCodes.ANSWER_NOT_JSON,
      `the model did not answer with a JSON plan (${answers} answer${answers === 1 ? '' : 's'}): ${last.problem.message}`,
      { location: `${options.stepId ?? 'plan'}#turn-${answers - 1}`, details },
    );
  }
  const first = lastProblems[0];
  throw new PlannerError(
    PlannerErrorCodes.REPAIRS_EXHAUSTED,
    `the plan still has ${lastProblems.length} problem${lastProblems.length === 1 ? '' : 's'} after ${maxRepairs} repair${maxRepairs === 1 ? '' : 's'}${first ? `; first: ${first.code} at ${first.path || '/'}: ${first.message}` : ''}`,
    { location: first?.path || '/', details },
  );
}

/** The model does not know a good plan id; a missing goal is the one asked for. */
function withDefaults(candidate: unknown, goal: string): unknown {
  if (typeof candidate !== 'object' || candidate === null || Array.isArray(candidate)) return candidate;
  const plan = candidate as Record<string, unknown>;
  return {
    ...plan,
    ...(plan.id === undefined ? { id: `plan_${sha256(JSON.stringify(plan)).slice(0, 12)}` } : {}),
    ...(plan.goal === undefined ? { goal } : {}),
  };
}

/** The answer and the problems, in the shape chat endpoints accept: every tool call gets a tool message. */
function feedback(response: ChatResponse, problems: readonly PlanProblem[]): ChatMessage[] {
  const text = problemsMessage(problems);
  const assistant: ChatMessage = {
    role: 'assistant',
    content: response.text,
    ...(response.toolCalls.length > 0 ? { toolCalls: response.toolCalls } : {}),
  };
  if (response.toolCalls.length === 0) return [assistant, { role: 'user', content: text }];
  return [
    assistant,
    ...response.toolCalls.map(
      (call): ChatMessage => ({ role: 'tool', toolCallId: call.id, name: call.name, content: text }),
    ),
  ];
}

/** What the journal keeps of an answered planner call. */
function answeredCall(call: PlannerCall): Pick<ModelCallEvent, 'response' | 'usage' | 'latencyMs'> {
  const { response } = call;
  return {
    response: {
      text: response.text,
      toolCalls: response.toolCalls,
      finishReason: response.finishReason,
      ...(response.model ? { model: response.model } : {}),
      problems: call.problems,
    },
    ...(response.usage ? { usage: response.usage } : {}),
    latencyMs: call.latencyMs,
  };
}

/**
 * The `model-call` event of a planner call made before there was a run to journal it in (a host
 * that plans first, then starts the run): the same event `planFromGoal` records with `journal`.
 */
export function plannerCallEvent(
  call: PlannerCall,
  model: string,
  stepId = 'plan',
): Omit<ModelCallEvent, 'seq' | 'at' | 'runId'> {
  return {
    type: 'model-call',
    stepId,
    turn: call.turn,
    model,
    request: { purpose: 'plan', messages: call.messages },
    ...answeredCall(call),
  };
}

/** Journals one planner model call (answered or failed), when a journal was given. */
async function journalCall(
  options: PlanFromGoalOptions,
  turn: number,
  messages: readonly ChatMessage[],
  outcome: Pick<ModelCallEvent, 'response' | 'usage' | 'latencyMs' | 'error'>,
): Promise<void> {
  if (!options.journal) return;
  await options.journal.record({
    type: 'model-call',
    stepId: options.stepId ?? 'plan',
    turn,
    model: options.model.name,
    ...(options.model.endpoint ? { endpoint: options.model.endpoint } : {}),
    request: { purpose: 'plan', messages },
    ...outcome,
  });
}

async function callModel(
  options: PlanFromGoalOptions,
  messages: readonly ChatMessage[],
  turn: number,
  submitPlan: ReturnType<typeof submitPlanDefinition>,
): Promise<{ response: ChatResponse; latencyMs: number }> {
  return generateWithRetry(
    options.model,
    { messages, tools: [submitPlan], toolChoice: 'auto' },
    {
      retry: { ...DEFAULT_MODEL_RETRY, ...options.retry },
      signal: options.signal ?? new AbortController().signal,
      timeoutMs: options.modelTimeoutMs,
      random: Math.random,
      onFailure: async ({ error, call, latencyMs, retryInMs }) => {
        const journaled = toStepError(error);
        await journalCall(options, turn, messages, {
          latencyMs,
          error: {
            ...journaled,
            details: { ...journaled.details, call, ...(retryInMs === undefined ? {} : { retryInMs }) },
          },
        });
      },
    },
  );
}
