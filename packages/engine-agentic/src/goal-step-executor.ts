import { ErrorCodes, isStoreError, type Step, type StepResult, StepwiseError } from '@stepwise/core';
import { type GoalStepExecutor, type GoalStepRequest, signalWithTimeout, toStepError } from '@stepwise/core/engine';
import type { FoldedRun } from '@stepwise/core/store';
import type { ChatModel } from './chat-model.js';
import type { ExpectationChecker } from './expectations.js';
import { DEFAULT_MODEL_RETRY, type ModelRetryOptions } from './generate-with-retry.js';
import type { GoalAttemptHooks, GoalAttemptStart } from './goal-attempt-hooks.js';
import {
  type CommandToolOptions,
  type LoopSettings,
  type ResolvedLimits,
  runGoalStep,
  type StepReplay,
} from './goal-step.js';
import { DEFAULT_SYSTEM_PROMPT } from './step-prompt.js';
import { loadTokenEstimator, type TokenEstimator } from './token-estimator.js';

/** Limits of the loop inside each goal step; every one is journaled as `limit-reach` when hit. */
export interface AgenticLimits {
  /** Model turns per step; a step's `maxTurns` wins. Then the step fails with E403. Default 10. */
  readonly maxTurns?: number;
  /** Tool calls in a row without an analysis; then the model must analyse before calling more. Default 5. */
  readonly maxConsecutiveToolCalls?: number;
  /** Failed tool calls (errors, denials, bad arguments) per step; then the step fails with E404. Default 3. */
  readonly maxToolFailures?: number;
  /** Tokens (prompt + completion, all turns) a step may spend; then it fails with E405. Default: no limit. */
  readonly tokenBudget?: number;
  /** Prompt budget per model call (messages + tool definitions); the sliding window keeps within it. Default 16 000. */
  readonly maxContextTokens?: number;
  /** Longer tool results are cut head + tail with a `[truncated N tokens]` marker. Default 2 000. */
  readonly maxToolResultTokens?: number;
}

export const DEFAULT_LIMITS: Required<Omit<AgenticLimits, 'tokenBudget'>> = {
  maxTurns: 10,
  maxConsecutiveToolCalls: 5,
  maxToolFailures: 3,
  maxContextTokens: 16_000,
  maxToolResultTokens: 2_000,
};

/** Options of the model loop that carries out goal steps. */
export interface GoalStepExecutorOptions {
  /** The model that drives goal steps: `openAICompatible(…)`, `fromAISDK(…)`, or your own ChatModel. */
  readonly model: ChatModel;
  readonly limits?: AgenticLimits;
  /** Backoff for transient model errors. Default: 3 retries, 1 s / 2 s / 4 s, ±20% jitter, Retry-After honoured. */
  readonly retry?: ModelRetryOptions;
  /** Replaces the built-in system prompt (the COMMAND / ANALYZE / COMPLETE / BLOCKED instructions). */
  readonly systemPrompt?: string;
  /** Per model call; a slower call is aborted and retried as transient. Default 120 000 ms. */
  readonly modelTimeoutMs?: number;
  /** Checkers for custom `expect` kinds, by kind; they win over the built-in ones. */
  readonly expectations?: Readonly<Record<string, ExpectationChecker>>;
  /**
   * The registered tool `command_succeeds` criteria (and custom checkers' `runCommand`) run through,
   * with the kernel's approval, sandbox and journal. Without it registered, a step with such a
   * criterion fails with E201: nothing is spawned outside the kernel.
   * Default `{ tool: 'run_command', args: (argv) => ({ command: [...argv] }) }` (tools-node's `run_command`).
   */
  readonly commandTool?: CommandToolOptions;
  /** Token counting for the context window. Default: gpt-tokenizer (o200k), loaded on first use. */
  readonly tokenEstimator?: TokenEstimator;
  /** Jitter source for backoff (tests pass a constant). Default Math.random. */
  readonly random?: () => number;
  /** Re-run in-flight non-idempotent tool calls of a resumed goal step instead of failing them. Default false. */
  readonly allowRerunInterrupted?: boolean;
  /**
   * When the model reports the step blocked: `fail` the step (E406), or `ask` a person: the model's
   * reason becomes a question (`question-ask`), the step and the run end `waiting`, and after
   * `respond(store, runId, { stepId, answer, by })` a resume hands the answer to the model as its
   * next message and the step's loop goes on. Default `fail`.
   */
  readonly onBlocked?: 'fail' | 'ask';
  /**
   * When the step runs out of turns (E403) or tool failures (E404): `fail`, or `ask` a person as
   * for `onBlocked`; an answer grants the step as many turns (or failures) again. Default `fail`.
   */
  readonly onLimit?: 'fail' | 'ask';
  /** Work before and after each attempt's model loop, inside the step (the code agent's workspace transaction). Default none. */
  readonly attempt?: GoalAttemptHooks;
}

const DEFAULT_COMMAND_TOOL: CommandToolOptions = {
  tool: 'run_command',
  args: (argv) => ({ command: [...argv] }),
};

function positive(name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isFinite(value) || value <= 0)) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `${name} must be a positive number, got ${value}`, {
      location: name,
    });
  }
}

export function resolveLimits(limits: AgenticLimits | undefined): ResolvedLimits {
  for (const [name, value] of Object.entries(limits ?? {})) positive(`limits.${name}`, value as number | undefined);
  return {
    maxTurns: limits?.maxTurns ?? DEFAULT_LIMITS.maxTurns,
    maxConsecutiveToolCalls: limits?.maxConsecutiveToolCalls ?? DEFAULT_LIMITS.maxConsecutiveToolCalls,
    maxToolFailures: limits?.maxToolFailures ?? DEFAULT_LIMITS.maxToolFailures,
    tokenBudget: limits?.tokenBudget,
    maxContextTokens: limits?.maxContextTokens ?? DEFAULT_LIMITS.maxContextTokens,
    maxToolResultTokens: limits?.maxToolResultTokens ?? DEFAULT_LIMITS.maxToolResultTokens,
  };
}

/**
 * The model loop as a goal-step executor: hand it to any engine whose policy admits goal steps
 * (`dagEngine({ goalSteps: goalStepExecutor({ model }) })`; `agenticEngine` does this for you).
 * Throws E601 for invalid options.
 */
export function goalStepExecutor(options: GoalStepExecutorOptions): GoalStepExecutor {
  if (!options?.model || typeof options.model.generate !== 'function') {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'a goal-step executor needs { model }, a ChatModel', {
      location: 'model',
    });
  }
  for (const name of ['onBlocked', 'onLimit'] as const) {
    const value = options[name];
    if (value !== undefined && value !== 'fail' && value !== 'ask') {
      throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `${name} must be 'fail' or 'ask', got ${String(value)}`, {
        location: name,
      });
    }
  }
  positive('modelTimeoutMs', options.modelTimeoutMs);
  let estimator: Promise<TokenEstimator> | undefined;
  const loadEstimator = () => {
    estimator ??= options.tokenEstimator ? Promise.resolve(options.tokenEstimator) : loadTokenEstimator();
    return estimator;
  };
  return executorWith(options, resolveLimits(options.limits), loadEstimator);
}

function executorWith(
  options: GoalStepExecutorOptions,
  limits: ResolvedLimits,
  loadEstimator: () => Promise<TokenEstimator>,
): GoalStepExecutor {
  const settingsFor = (tokens: TokenEstimator): LoopSettings => ({
    model: options.model,
    limits,
    retry: { ...DEFAULT_MODEL_RETRY, ...options.retry },
    systemPrompt: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
    modelTimeoutMs: options.modelTimeoutMs ?? 120_000,
    estimator: tokens,
    random: options.random ?? Math.random,
    expectations: options.expectations ?? {},
    commandTool: options.commandTool ?? DEFAULT_COMMAND_TOOL,
    allowRerunInterrupted: options.allowRerunInterrupted ?? false,
    ask: { blocked: options.onBlocked === 'ask', limits: options.onLimit === 'ask' },
  });
  return {
    journaled: { model: options.model.name, limits },
    // The limits the run started with: a resumed step keeps the budget it began under.
    fromJournal: (journaled) => {
      const recorded = (journaled as { limits?: ResolvedLimits } | undefined)?.limits;
      return executorWith(options, recorded ?? limits, loadEstimator);
    },
    async execute(request: GoalStepRequest): Promise<StepResult> {
      const settings = settingsFor(await loadEstimator());
      return withStepTimeout(request, async (signal) => {
        const { attempt } = request;
        const kernel = { ...request.kernel, signal };
        const start = await beginAttempt(options.attempt, request);
        const step = start.step ?? request.step;
        const replay = request.resumed && !start.outcome ? replayOf(request.resumed, step, attempt) : undefined;
        const end = options.attempt?.end;
        return runGoalStep({
          plan: request.plan,
          step,
          stepIndex: request.index,
          attempt,
          kernel,
          settings,
          dependencies: (step.dependsOn ?? []).map((stepId) => ({ stepId, output: request.outputs.get(stepId) })),
          ...(replay ? { replay } : {}),
          ...(start.outcome ? { given: start.outcome } : {}),
          ...(end && !start.failed ? { settle: (outcome) => end(request, outcome, signal) } : {}),
        });
      });
    },
  };
}

/** The attempt's `begin` hook; a throw (other than the store's) fails the attempt. */
async function beginAttempt(
  hooks: GoalAttemptHooks | undefined,
  request: GoalStepRequest,
): Promise<GoalAttemptStart & { failed?: true }> {
  if (!hooks?.begin) return {};
  try {
    return await hooks.begin(request);
  } catch (thrown) {
    if (isStoreError(thrown)) throw thrown;
    const error = { ...toStepError(thrown), location: request.step.id };
    return { outcome: { status: 'failed', error }, failed: true };
  }
}

/** The journaled turns of an attempt a crash (or a question to a person) interrupted: the step continues after the last one. */
function replayOf(run: FoldedRun, step: Step, attempt: number): StepReplay {
  return {
    modelCalls: run.modelCalls
      .filter(
        (event) =>
          event.stepId === step.id &&
          event.error === undefined &&
          event.response !== undefined &&
          (event.request as { attempt?: number } | undefined)?.attempt === attempt,
      )
      .sort((a, b) => a.turn - b.turn || a.seq - b.seq),
    executions: run.executions,
    approvals: run.approvals,
    startedAt: run.steps.get(step.id)?.startedAt ?? new Date().toISOString(),
    questions: run.questions.filter((question) => question.stepId === step.id && question.attempt === attempt),
  };
}

/** A goal step's signal: the run's, plus its own timeout. */
async function withStepTimeout(
  request: GoalStepRequest,
  work: (signal: AbortSignal) => Promise<StepResult>,
): Promise<StepResult> {
  const { step } = request;
  const guard = signalWithTimeout(
    request.kernel.signal ?? new AbortController().signal,
    step.timeoutMs,
    () => new StepwiseError(ErrorCodes.STEP_TIMEOUT, `step ${step.id} timed out after ${step.timeoutMs} ms`),
  );
  try {
    return await work(guard.signal);
  } finally {
    guard.dispose();
  }
}
