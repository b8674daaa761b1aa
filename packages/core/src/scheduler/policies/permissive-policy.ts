import { ErrorCodes, StepwiseError } from '../../errors.js';
import { type RetryPolicy, RetryPolicySchema } from '../../plan/plan-schema.js';
import type { ToolRegistry } from '../../tools/tool-registry.js';
import type { EnginePolicy, GoalStepExecutor, RecoveryHook } from '../engine-policy.js';
import type { AdjustHook } from './adjust-hook.js';

/** Options of the permissive policy (the dag engine's, which the agentic engine reuses). */
export interface PermissivePolicyOptions {
  readonly tools: ToolRegistry;
  /** Most steps running at once, across the run (`Infinity`: every ready step at once). Default 16. */
  readonly concurrency?: number;
  /** Most steps of one tool running at once, by tool name or alias, e.g. `{ run_command: 1 }`. Default: none. */
  readonly toolConcurrency?: Readonly<Record<string, number>>;
  /** Retry policy for steps that set none (a step's own `retry` wins field by field). */
  readonly retry?: Partial<RetryPolicy>;
  /** Source of randomness for backoff jitter (tests pass a constant). Default `Math.random`. */
  readonly random?: () => number;
  /** Recovery hook for failed steps (e.g. ask an LLM). Default: none, the failure policy applies. */
  readonly onStepFailed?: RecoveryHook;
  /** Carries out goal steps (steps without `tool`). Default: none; a goal step is then invalid. */
  readonly goalSteps?: GoalStepExecutor;
  /**
   * Asked after each step ends (and after a final failure), before its dependents run: continue,
   * revise the pending steps, or stop. `adjustWithModel({ model })` asks a chat model. Default: none.
   */
  readonly adjust?: AdjustHook;
}

/**
 * Steps running at once when the host sets no bound. Bounded on purpose: an unbounded fan-out of
 * 100,000 steps would hold 100,000 tool calls, signals and results in memory at once.
 */
export const DEFAULT_CONCURRENCY = 16;

let partialRetry: ReturnType<typeof RetryPolicySchema.partial> | undefined;
/** Built once: zod compiles a schema on its first parse, which cost more than the rest of creating an engine. */
const partialRetrySchema = () => {
  partialRetry ??= RetryPolicySchema.partial();
  return partialRetry;
};

/** The permissive policy: eager, concurrency N, references resolved; failures follow `critical`. */
export type PermissivePolicy = EnginePolicy & { readonly retry: Partial<RetryPolicy> };

function isLimit(value: unknown): value is number {
  return value === Number.POSITIVE_INFINITY || (typeof value === 'number' && Number.isInteger(value) && value >= 1);
}

function invalidOption(engine: string, location: string, message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.CONFIG_INVALID, `${engine}Engine: ${message}`, { location });
}

/**
 * Engine options with defaults applied; throws E601 naming the bad option. `name` and `validation`
 * let the agentic engine reuse the same policy under its own name.
 */
export function permissivePolicy(
  options: PermissivePolicyOptions,
  identity: { readonly name: string; readonly validation: EnginePolicy['validation'] } = {
    name: 'dag',
    validation: 'dag',
  },
): PermissivePolicy {
  const invalid = (location: string, message: string) => invalidOption(identity.name, location, message);
  if (!options || typeof options !== 'object' || !options.tools) {
    throw invalid('tools', 'options.tools (a ToolRegistry) is required');
  }
  if (typeof options.tools.get !== 'function' || typeof options.tools.has !== 'function') {
    throw invalid('tools', 'options.tools must be a ToolRegistry (new ToolRegistry([...])), not a list of tools');
  }
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!isLimit(concurrency)) throw invalid('concurrency', 'concurrency must be an integer ≥ 1 or Infinity');
  const toolConcurrency = options.toolConcurrency ?? {};
  for (const [tool, limit] of Object.entries(toolConcurrency)) {
    if (!isLimit(limit)) throw invalid(`toolConcurrency/${tool}`, `toolConcurrency.${tool} must be an integer ≥ 1`);
  }
  const retry = options.retry ?? {};
  // No retry option, nothing to check: creating an engine stays cheap (see partialRetrySchema).
  const parsed = options.retry === undefined ? undefined : partialRetrySchema().safeParse(retry);
  if (parsed && !parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(
      `retry/${issue?.path.join('/') ?? ''}`,
      `invalid retry policy: ${issue?.message ?? 'unknown problem'}`,
    );
  }
  if (options.random !== undefined && typeof options.random !== 'function')
    throw invalid('random', 'random must be a function returning [0, 1)');
  if (options.onStepFailed !== undefined && typeof options.onStepFailed !== 'function')
    throw invalid('onStepFailed', 'onStepFailed must be a function');
  if (options.adjust !== undefined && typeof options.adjust !== 'function')
    throw invalid('adjust', 'adjust must be a function (step, result, context) => decision');
  if (options.goalSteps !== undefined && typeof options.goalSteps?.execute !== 'function')
    throw invalid('goalSteps', 'goalSteps must be a GoalStepExecutor (an object with execute)');
  return {
    ...identity,
    references: 'resolve',
    stopOn: 'critical',
    unstarted: 'end',
    duration: 'wall',
    goalSteps: options.goalSteps,
    concurrency,
    toolConcurrency: { ...toolConcurrency },
    retry: (parsed?.data ?? {}) as Partial<RetryPolicy>,
    random: options.random ?? Math.random,
    onStepFailed: options.onStepFailed,
    ...(options.adjust ? { adjust: options.adjust } : {}),
  };
}

/**
 * What `run-start` records so a resume schedules the same way (JSON has no Infinity: `null` is
 * unbounded). `adjust` says whether the run asks an adjust hook: a resume asks again only the
 * adjustments a crash cut off, never those of a run that had no hook.
 */
export function journaledPolicy(settings: PermissivePolicy): Record<string, unknown> {
  return {
    concurrency: Number.isFinite(settings.concurrency) ? settings.concurrency : null,
    toolConcurrency: settings.toolConcurrency,
    retry: settings.retry,
    adjust: settings.adjust !== undefined,
    ...settings.goalSteps?.journaled,
  };
}

/** The journaled options of a run, where they are well-formed, over the resuming engine's own. */
export function policyFromJournal(
  journaled: Readonly<Record<string, unknown>> | undefined,
  fallback: PermissivePolicy,
): PermissivePolicy {
  if (!journaled) return fallback;
  const concurrency =
    journaled.concurrency === null
      ? Number.POSITIVE_INFINITY
      : isLimit(journaled.concurrency)
        ? journaled.concurrency
        : fallback.concurrency;
  const tools = journaled.toolConcurrency;
  const toolConcurrency =
    tools && typeof tools === 'object' && Object.values(tools).every(isLimit)
      ? (tools as Record<string, number>)
      : fallback.toolConcurrency;
  const retry = partialRetrySchema().safeParse(journaled.retry ?? {});
  const goalSteps = fallback.goalSteps?.fromJournal?.(journaled) ?? fallback.goalSteps;
  return {
    ...fallback,
    concurrency,
    toolConcurrency,
    retry: retry.success ? (retry.data as Partial<RetryPolicy>) : fallback.retry,
    goalSteps,
  };
}
