import { ErrorCodes, type RetryPolicy, RetryPolicySchema, StepwiseError } from '@stepwise/core';
import type { DagEngineOptions } from './dag-options.js';
import type { DagSettings } from './dag-run.js';

function isLimit(value: unknown): value is number {
  return value === Number.POSITIVE_INFINITY || (typeof value === 'number' && Number.isInteger(value) && value >= 1);
}

function invalid(location: string, message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.CONFIG_INVALID, `dagEngine: ${message}`, { location });
}

/** Engine options with defaults applied; throws E601 naming the bad option. */
export function resolveSettings(options: DagEngineOptions): DagSettings {
  if (!options || typeof options !== 'object' || !options.tools) {
    throw invalid('tools', 'options.tools (a ToolRegistry) is required');
  }
  const concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
  if (!isLimit(concurrency)) throw invalid('concurrency', 'concurrency must be an integer ≥ 1 or Infinity');
  const toolConcurrency = options.toolConcurrency ?? {};
  for (const [tool, limit] of Object.entries(toolConcurrency)) {
    if (!isLimit(limit)) throw invalid(`toolConcurrency/${tool}`, `toolConcurrency.${tool} must be an integer ≥ 1`);
  }
  const retry = options.retry ?? {};
  const parsed = RetryPolicySchema.partial().safeParse(retry);
  if (!parsed.success) {
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
  return {
    concurrency,
    toolConcurrency: { ...toolConcurrency },
    retry: parsed.data as Partial<RetryPolicy>,
    random: options.random ?? Math.random,
    onStepFailed: options.onStepFailed,
  };
}

/** What `run-start` records so a resume schedules the same way (JSON has no Infinity: `null` is unbounded). */
export function journaledOptions(settings: DagSettings): Record<string, unknown> {
  return {
    concurrency: Number.isFinite(settings.concurrency) ? settings.concurrency : null,
    toolConcurrency: settings.toolConcurrency,
    retry: settings.retry,
  };
}

/** The journaled options of a run, where they are well-formed, over the resuming engine's own. */
export function settingsFromJournal(
  journaled: Record<string, unknown> | undefined,
  fallback: DagSettings,
): DagSettings {
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
  const retry = RetryPolicySchema.partial().safeParse(journaled.retry ?? {});
  return {
    ...fallback,
    concurrency,
    toolConcurrency,
    retry: retry.success ? (retry.data as Partial<RetryPolicy>) : fallback.retry,
  };
}
