import type { EngineOptions } from '@stepwise/core';
import type {
  PermissivePolicyOptions,
  ProgressRunHandle,
  RunProgress,
  SchedulerStepStatus,
} from '@stepwise/core/engine';

export type { RecoveryContext, RecoveryDecision, RecoveryHook } from '@stepwise/core';

/**
 * The core engine options plus the permissive policy's: `concurrency` (default 16; `Infinity`
 * starts every ready step at once), `toolConcurrency`, `retry` (default core `DEFAULT_RETRY`: 3 attempts,
 * 1 s, ×2, max 30 s, jitter 0.2), `random`, `onStepFailed` (the recovery hook) and `goalSteps`
 * (e.g. `goalStepExecutor({ model })` from `@stepwise/engine-agentic`; without it a goal step is invalid).
 */
export interface DagEngineOptions extends EngineOptions, Omit<PermissivePolicyOptions, 'tools'> {}

/** Where a step is in this session (the scheduler's step status). */
export type DagStepStatus = SchedulerStepStatus;

/** An overall summary, cheap enough to poll. */
export type DagProgress = RunProgress;

/** The core run handle plus live progress. */
export type DagRunHandle = ProgressRunHandle;
