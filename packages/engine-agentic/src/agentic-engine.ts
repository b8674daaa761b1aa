import {
  backoffDelay,
  deriveExecutionId,
  type Engine,
  type EngineOptions,
  ErrorCodes,
  endStep,
  type FoldedRun,
  finishRun,
  inFlightSteps,
  interruptedAction,
  interruptedError,
  invokeStep,
  type KernelContext,
  MemoryStore,
  type ModelCallEvent,
  newRunId,
  type Plan,
  planInvalidError,
  type ResumeOptions,
  type RunEvent,
  type RunHandle,
  type RunJournal,
  type RunOptions,
  type RunResult,
  type RunStore,
  reopenRun,
  resultFromFold,
  type Step,
  type StepResult,
  StepwiseError,
  sleep,
  startRun,
  validatePlan,
} from '@stepwise/core';
import type { ChatModel } from './chat-model.js';
import type { ExpectationChecker } from './expectations.js';
import { DEFAULT_MODEL_RETRY, type ModelRetryOptions } from './generate-with-retry.js';
import {
  type CommandToolOptions,
  type LoopSettings,
  type ResolvedLimits,
  runGoalStep,
  type StepReplay,
} from './goal-step.js';
import { lazyRunHandle } from './lazy-run-handle.js';
import { scheduleSteps } from './schedule-steps.js';
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

export interface AgenticEngineOptions extends EngineOptions {
  /** The model that drives goal steps: `openAICompatible(…)`, `fromAISDK(…)`, or your own ChatModel. */
  readonly model: ChatModel;
  readonly limits?: AgenticLimits;
  /** Backoff for transient model errors. Default: 3 retries, 1 s / 2 s / 4 s, ±20% jitter, Retry-After honoured. */
  readonly retry?: ModelRetryOptions;
  /** Replaces the built-in system prompt (the COMMAND / ANALYZE / COMPLETE / BLOCKED instructions). */
  readonly systemPrompt?: string;
  /** Per model call; a slower call is aborted and retried as transient. Default 120 000 ms. */
  readonly modelTimeoutMs?: number;
  /** Steps running at once (they share the workspace). Default 1. */
  readonly concurrency?: number;
  /** Checkers for custom `expect` kinds, by kind; they win over the built-in ones. */
  readonly expectations?: Readonly<Record<string, ExpectationChecker>>;
  /**
   * How `command_succeeds` criteria run when the registry has this tool (through the kernel, with
   * approval and sandbox). Default `{ tool: 'run_command', args: (argv) => ({ command: [...argv] }) }` (tools-node's `run_command`).
   */
  readonly commandTool?: CommandToolOptions;
  /** Timeout of a `command_succeeds` run without a command tool (direct spawn, no shell). Default 120 000 ms. */
  readonly commandTimeoutMs?: number;
  /** Token counting for the context window. Default: gpt-tokenizer (o200k), loaded on first run. */
  readonly tokenEstimator?: TokenEstimator;
  /** Jitter source for backoff (tests pass a constant). Default Math.random. */
  readonly random?: () => number;
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

function resolveLimits(limits: AgenticLimits | undefined): ResolvedLimits {
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

interface Session {
  readonly journal: RunJournal;
  readonly plan: Plan;
  readonly settings: LoopSettings;
  readonly concurrency: number;
  readonly startedAt: number;
}

/**
 * The agentic engine: steps run in dependency order (the dag engine's failure rules); a step
 * with a `tool` runs directly through the kernel, a goal step (no tool) runs an LLM loop whose
 * every tool call goes through the kernel too, with the same approvals, sandbox and journal.
 */
export function agenticEngine(options: AgenticEngineOptions): Engine {
  if (!options.model || typeof options.model.generate !== 'function') {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'agenticEngine needs { model }, a ChatModel', {
      location: 'model',
    });
  }
  const limits = resolveLimits(options.limits);
  positive('concurrency', options.concurrency);
  positive('modelTimeoutMs', options.modelTimeoutMs);
  positive('commandTimeoutMs', options.commandTimeoutMs);
  const retry = { ...DEFAULT_MODEL_RETRY, ...options.retry };
  const store: RunStore = options.store ?? new MemoryStore();
  const random = options.random ?? Math.random;
  const log = options.log;
  let estimator: Promise<TokenEstimator> | undefined;
  const loadEstimator = () => {
    estimator ??= options.tokenEstimator ? Promise.resolve(options.tokenEstimator) : loadTokenEstimator();
    return estimator;
  };

  const settingsFor = (recorded: ResolvedLimits, tokens: TokenEstimator): LoopSettings => ({
    model: options.model,
    limits: recorded,
    retry,
    systemPrompt: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
    modelTimeoutMs: options.modelTimeoutMs ?? 120_000,
    estimator: tokens,
    random,
    expectations: options.expectations ?? {},
    commandTool: options.commandTool ?? DEFAULT_COMMAND_TOOL,
    commandTimeoutMs: options.commandTimeoutMs ?? 120_000,
    allowRerunInterrupted: options.allowRerunInterrupted ?? false,
  });

  const kernelFor = (journal: RunJournal, signal: AbortSignal): KernelContext => ({
    runId: journal.runId,
    journal,
    registry: options.tools,
    ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    signal,
    ...(options.approvals ? { approvals: options.approvals } : {}),
    ...(options.defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs: options.defaultTimeoutMs }),
    ...(log ? { log } : {}),
  });

  const listen = async (journal: RunJournal, extra: ((event: RunEvent) => void) | undefined, replayFrom?: number) => {
    const listeners = [options.onEvent, extra].filter((listener) => listener !== undefined);
    if (listeners.length === 0) return;
    const upTo = journal.lastSeq;
    journal.subscribe((event) => {
      for (const listener of listeners) listener(event);
    });
    // Events journaled before we could subscribe (run-start) still reach the listeners.
    if (replayFrom !== undefined) {
      for await (const event of store.read(journal.runId, replayFrom)) {
        if (event.seq > upTo) break;
        for (const listener of listeners) listener(event);
      }
    }
  };

  /** A goal step's signal: the run's, plus its own timeout. */
  const withStepTimeout = async (
    step: Step,
    signal: AbortSignal,
    work: (signal: AbortSignal) => Promise<StepResult>,
  ): Promise<StepResult> => {
    if (step.timeoutMs === undefined) return work(signal);
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () =>
        controller.abort(
          new StepwiseError(ErrorCodes.STEP_TIMEOUT, `step ${step.id} timed out after ${step.timeoutMs} ms`),
        ),
      step.timeoutMs,
    );
    try {
      return await work(controller.signal);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  };

  const dependenciesOf = (step: Step, outputs: ReadonlyMap<string, unknown>) =>
    (step.dependsOn ?? []).map((stepId) => ({ stepId, output: outputs.get(stepId) }));

  /** A tool step: the kernel runs it; retryable failures retry per the step's policy. */
  const runToolStep = async (
    session: Session,
    step: Step,
    firstAttempt: number,
    signal: AbortSignal,
    outputs: ReadonlyMap<string, unknown>,
  ): Promise<StepResult> => {
    const kernel = kernelFor(session.journal, signal);
    for (let attempt = firstAttempt; ; attempt++) {
      const result = await invokeStep(step, { attempt, references: 'resolve', outputs }, kernel);
      const maxAttempts = step.retry?.maxAttempts ?? 1;
      if (result.status !== 'failed' || !result.error?.retryable || attempt >= maxAttempts || signal.aborted) {
        return result;
      }
      const delayMs = backoffDelay(step.retry, attempt, random);
      await session.journal.record({
        type: 'step-retry',
        stepId: step.id,
        attempt,
        nextAttempt: attempt + 1,
        delayMs,
        error: result.error,
      });
      try {
        await sleep(delayMs, signal);
      } catch {
        return result;
      }
    }
  };

  const runStep = (
    session: Session,
    step: Step,
    index: number,
    signal: AbortSignal,
    outputs: ReadonlyMap<string, unknown>,
  ) => {
    if (step.tool !== undefined) return runToolStep(session, step, 1, signal, outputs);
    return withStepTimeout(step, signal, (stepSignal) => {
      const kernel = kernelFor(session.journal, stepSignal);
      kernel.journal.emit({
        type: 'step-start',
        stepId: step.id,
        tool: undefined,
        attempt: 1,
        executionId: deriveStepExecutionId(session, step.id, 1),
      });
      return runGoalStep({
        plan: session.plan,
        step,
        stepIndex: index,
        attempt: 1,
        kernel,
        settings: session.settings,
        dependencies: dependenciesOf(step, outputs),
      });
    });
  };

  const execute = async (
    session: Session,
    signal: AbortSignal,
    ended: ReadonlyMap<string, StepResult>,
    inFlight: Map<string, (signal: AbortSignal, outputs: ReadonlyMap<string, unknown>) => Promise<StepResult>>,
  ): Promise<RunResult> => {
    try {
      const outcome = await scheduleSteps({
        plan: session.plan,
        runId: session.journal.runId,
        journal: session.journal,
        concurrency: session.concurrency,
        signal,
        ended,
        inFlight,
        runStep: (step, index, stepSignal, outputs) => runStep(session, step, index, stepSignal, outputs),
      });
      return await finishRun(session.journal, {
        plan: session.plan,
        engine: 'agentic',
        status: outcome.status,
        steps: outcome.steps,
        durationMs: Date.now() - session.startedAt,
      });
    } catch (error) {
      await session.journal.close().catch(() => undefined);
      throw error;
    }
  };

  const cancellable = (external: AbortSignal | undefined) => {
    const controller = new AbortController();
    const cancel = (reason?: string) => {
      if (!controller.signal.aborted) {
        controller.abort(new StepwiseError(ErrorCodes.STEP_CANCELLED, reason ?? 'run cancelled'));
      }
    };
    if (external?.aborted) cancel(String(external.reason ?? 'run cancelled'));
    else external?.addEventListener('abort', () => cancel(String(external.reason ?? 'run cancelled')), { once: true });
    return { signal: controller.signal, cancel };
  };

  const validate = (plan: unknown) => validatePlan(plan, { tools: options.tools, engine: 'agentic' });

  return {
    name: 'agentic',
    validate,

    run(plan: Plan, runOptions: RunOptions = {}): RunHandle {
      const runId = runOptions.runId ?? newRunId();
      const { signal, cancel } = cancellable(runOptions.signal);
      const session = (async (): Promise<Session> => {
        const validation = validate(plan);
        if (!validation.ok) throw planInvalidError(validation.problems);
        const tokens = await loadEstimator();
        const concurrency = options.concurrency ?? 1;
        const journal = await startRun({
          store,
          runId,
          plan: validation.plan,
          engine: 'agentic',
          ...(runOptions.authorization ? { authorization: runOptions.authorization } : {}),
          ...(runOptions.parentRunId ? { parentRunId: runOptions.parentRunId } : {}),
          ...(options.owner ? { owner: options.owner } : {}),
          ...(options.leaseTtlMs ? { leaseTtlMs: options.leaseTtlMs } : {}),
          ...(options.redactor ? { redactor: options.redactor } : {}),
          options: { model: options.model.name, limits, concurrency },
        });
        await listen(journal, runOptions.onEvent, 0);
        return {
          journal,
          plan: validation.plan,
          settings: settingsFor(limits, tokens),
          concurrency,
          startedAt: Date.now(),
        };
      })();
      const result = session.then((started) => execute(started, signal, new Map(), new Map()));
      return lazyRunHandle({
        runId,
        store,
        journal: session.then((started) => started.journal),
        result,
        cancel,
      });
    },

    resume(runId: string, resumeOptions: ResumeOptions = {}): RunHandle {
      const { signal, cancel } = cancellable(resumeOptions.signal);
      const opened = (async () => {
        const tokens = await loadEstimator();
        const reopened = await reopenRun({
          store,
          runId,
          ...(options.owner ? { owner: options.owner } : {}),
          ...(options.leaseTtlMs ? { leaseTtlMs: options.leaseTtlMs } : {}),
          ...(options.redactor ? { redactor: options.redactor } : {}),
        });
        return { ...reopened, tokens };
      })();
      const result = opened.then(async ({ journal, run, plan, tokens }) => {
        if (run.status !== 'running') {
          await journal.close();
          const finished = resultFromFold(run);
          if (!finished) throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} cannot be resumed`);
          return finished;
        }
        await listen(journal, resumeOptions.onEvent);
        const recorded = run.options as { limits?: ResolvedLimits; concurrency?: number } | undefined;
        const session: Session = {
          journal,
          plan,
          // The limits the run started with: a resumed step keeps the budget it began under.
          settings: settingsFor(recorded?.limits ?? limits, tokens),
          concurrency: recorded?.concurrency ?? options.concurrency ?? 1,
          startedAt: Date.parse(run.createdAt) || Date.now(),
        };
        return resumeRun(session, run, signal);
      });
      return lazyRunHandle({
        runId,
        store,
        journal: opened.then(({ journal }) => journal),
        result,
        cancel,
      });
    },
  };

  async function resumeRun(session: Session, run: FoldedRun, signal: AbortSignal): Promise<RunResult> {
    const { plan, journal } = session;
    const ended = new Map<string, StepResult>();
    for (const state of run.steps.values()) if (state.result) ended.set(state.stepId, state.result);
    const inFlight = new Map<
      string,
      (signal: AbortSignal, outputs: ReadonlyMap<string, unknown>) => Promise<StepResult>
    >();
    const interrupted: { stepId: string; action: 'rerun' | 'fail' | 'finish' }[] = [];
    for (const state of [...inFlightSteps(run), ...[...run.steps.values()].filter((s) => s.status === 'retrying')]) {
      const index = plan.steps.findIndex((step) => step.id === state.stepId);
      const step = plan.steps[index];
      if (!step) continue;
      if (step.tool === undefined) {
        // A goal step continues after its last completed turn: nothing that finished runs again.
        interrupted.push({ stepId: step.id, action: 'rerun' });
        const replay: StepReplay = {
          modelCalls: run.modelCalls
            .filter(
              (event: ModelCallEvent) =>
                event.stepId === step.id &&
                event.error === undefined &&
                event.response !== undefined &&
                (event.request as { attempt?: number } | undefined)?.attempt === state.attempt,
            )
            .sort((a, b) => a.turn - b.turn || a.seq - b.seq),
          executions: run.executions,
          approvals: run.approvals,
          startedAt: state.startedAt ?? new Date().toISOString(),
        };
        inFlight.set(step.id, (stepSignal, outputs) =>
          withStepTimeout(step, stepSignal, (timed) =>
            runGoalStep({
              plan,
              step,
              stepIndex: index,
              attempt: state.attempt,
              kernel: kernelFor(journal, timed),
              settings: session.settings,
              dependencies: dependenciesOf(step, outputs),
              replay,
            }),
          ),
        );
        continue;
      }
      if (state.status === 'retrying') {
        interrupted.push({ stepId: step.id, action: 'rerun' });
        inFlight.set(step.id, (stepSignal, outputs) =>
          runToolStep(session, step, state.attempt + 1, stepSignal, outputs),
        );
        continue;
      }
      const action = interruptedAction(state, options.allowRerunInterrupted ?? false);
      interrupted.push({ stepId: step.id, action });
      const executionId = state.executionId ?? deriveStepExecutionId(session, step.id, state.attempt);
      const startedAt = state.startedAt ?? new Date().toISOString();
      if (action === 'rerun') {
        inFlight.set(step.id, (stepSignal, outputs) =>
          runToolStep(session, step, state.attempt + 1, stepSignal, outputs),
        );
      } else if (action === 'fail') {
        inFlight.set(step.id, () =>
          endStep(
            step,
            state.attempt,
            executionId,
            startedAt,
            performance.now(),
            { status: 'failed', error: interruptedError(step.id), artifacts: [] },
            { journal },
          ),
        );
      } else {
        const toolResult = state.toolResult as NonNullable<typeof state.toolResult>;
        const retryable =
          toolResult.status === 'failed' &&
          toolResult.error?.retryable === true &&
          state.attempt < (step.retry?.maxAttempts ?? 1);
        inFlight.set(step.id, (stepSignal, outputs) =>
          retryable
            ? runToolStep(session, step, state.attempt + 1, stepSignal, outputs)
            : endStep(
                step,
                state.attempt,
                executionId,
                startedAt,
                performance.now(),
                {
                  status:
                    toolResult.status === 'succeeded'
                      ? 'succeeded'
                      : toolResult.status === 'cancelled'
                        ? 'cancelled'
                        : 'failed',
                  output: toolResult.output,
                  ...(toolResult.error ? { error: toolResult.error } : {}),
                  artifacts: run.executions.get(executionId)?.artifacts ?? [],
                },
                { journal },
              ),
        );
      }
    }
    await journal.record({
      type: 'run-resume',
      owner: journal.lease?.owner ?? options.owner ?? 'unknown',
      interrupted,
    });
    return execute(session, signal, ended, inFlight);
  }
}

function deriveStepExecutionId(session: Session, stepId: string, attempt: number): string {
  return deriveExecutionId(session.journal.runId, stepId, attempt);
}
