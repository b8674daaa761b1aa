import {
  type AdjustHook,
  type Engine,
  type EngineOptions,
  ErrorCodes,
  type Plan,
  type RecoveryHook,
  type ResumeOptions,
  type RunOptions,
  StepwiseError,
} from '@stepwise/core';
import {
  createPolicyEngine,
  journaledPolicy,
  type ProgressRunHandle,
  permissivePolicy,
  policyFromJournal,
} from '@stepwise/core/engine';
import { type GoalStepExecutorOptions, goalStepExecutor } from './goal-step-executor.js';

export interface AgenticEngineOptions extends EngineOptions, GoalStepExecutorOptions {
  /** Steps running at once (they share the workspace). Default 1. */
  readonly concurrency?: number;
  /**
   * Asked after each step ends: continue, revise the pending steps, or stop (`adjustWithModel({ model })`
   * asks a chat model). Default: none.
   */
  readonly adjust?: AdjustHook;
  /** Recovery hook for failed steps (retry, skip, abort, insert steps). Default: none. */
  readonly onStepFailed?: RecoveryHook;
}

/** The agentic engine: `Engine` whose handles also report progress. */
export interface AgenticEngine extends Engine {
  readonly name: 'agentic';
  run(plan: Plan, options?: RunOptions): ProgressRunHandle;
  resume(runId: string, options?: ResumeOptions): ProgressRunHandle;
}

/**
 * The agentic engine: the dag engine's policy (dependency order, `critical`, transitive skip,
 * cancel, resume) plus the model loop for goal steps. A step with a `tool` runs directly through
 * the kernel (retried only when its own `retry` allows); a goal step (no tool) runs an LLM loop
 * whose every tool call goes through the kernel too, with the same approvals, sandbox and journal.
 *
 * Throws E601 for invalid options; `run` throws synchronously for an invalid plan (E001, E201, E202).
 */
export function agenticEngine(options: AgenticEngineOptions): AgenticEngine {
  if (!options?.model || typeof options.model.generate !== 'function') {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, 'agenticEngine needs { model }, a ChatModel', {
      location: 'model',
    });
  }
  if (options.concurrency !== undefined && !(Number.isInteger(options.concurrency) && options.concurrency >= 1)) {
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `concurrency must be a positive number, got ${options.concurrency}`,
      {
        location: 'concurrency',
      },
    );
  }
  const policy = permissivePolicy(
    {
      tools: options.tools,
      concurrency: options.concurrency ?? 1,
      // Tool errors go back to the model; a tool step retries only when the plan asks.
      retry: { maxAttempts: 1 },
      ...(options.random ? { random: options.random } : {}),
      ...(options.adjust ? { adjust: options.adjust } : {}),
      ...(options.onStepFailed ? { onStepFailed: options.onStepFailed } : {}),
      goalSteps: goalStepExecutor(options),
    },
    { name: 'agentic', validation: 'agentic' },
  );
  const engine = createPolicyEngine({
    policy,
    options,
    journaledOptions: journaledPolicy(policy),
    policyFromJournal: (journaled) => policyFromJournal(journaled, policy),
  });
  return {
    name: 'agentic',
    validate: engine.validate,
    run: (plan, runOptions) => engine.run(plan, runOptions),
    resume: (runId, resumeOptions) => engine.resume(runId, resumeOptions),
  };
}
