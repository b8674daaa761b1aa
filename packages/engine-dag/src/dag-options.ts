import type { EngineOptions, RetryPolicy, RunHandle, Step, StepError, StepStatus } from '@stepwise/core';

/** What a recovery hook may answer for a failed step. */
export type RecoveryDecision =
  /** Run the step again now (a new attempt, new executionId), optionally with new args (references allowed). */
  | { readonly action: 'retry'; readonly args?: Record<string, unknown>; readonly reason?: string }
  /** Give the step up but let its dependents run; dependents that reference its output are skipped (E310). */
  | { readonly action: 'skip'; readonly reason?: string }
  /** Fail the whole run, as if the step were critical. */
  | { readonly action: 'abort'; readonly reason?: string };

/** What a recovery hook learns about the failure besides the step and its error. */
export interface RecoveryContext {
  readonly runId: string;
  /** The attempt that failed (1-based). */
  readonly attempt: number;
  /** How many times a hook already answered `retry` for this step in this session. */
  readonly recoveries: number;
  /** The args the failed attempt used (before reference resolution). */
  readonly args: Record<string, unknown>;
  /** Outputs of the steps that succeeded so far (redacted, as journaled). */
  readonly outputs: ReadonlyMap<string, unknown>;
  /** Aborted when the run is cancelled or fails; a slow hook should honour it. */
  readonly signal: AbortSignal;
}

/**
 * Asked once the retry policy has given up on a failed step (non-retryable error, attempts used up,
 * or a step interrupted by a crash). Return `undefined` to apply the default failure policy.
 */
export type RecoveryHook = (
  step: Step,
  error: StepError,
  context: RecoveryContext,
) => Promise<RecoveryDecision | undefined> | RecoveryDecision | undefined;

export interface DagEngineOptions extends EngineOptions {
  /** Most steps running at once, across the run. Default `Infinity` (every ready step starts at once). */
  readonly concurrency?: number;
  /** Most steps of one tool running at once, by tool name or alias, e.g. `{ run_command: 1 }`. Default: none. */
  readonly toolConcurrency?: Readonly<Record<string, number>>;
  /** Retry policy for steps that set none (a step's own `retry` wins field by field). Default core `DEFAULT_RETRY`: 3 attempts, 1 s, ×2, max 30 s, jitter 0.2. */
  readonly retry?: Partial<RetryPolicy>;
  /** Source of randomness for backoff jitter (tests pass a constant). Default `Math.random`. */
  readonly random?: () => number;
  /** Recovery hook for failed steps (e.g. ask an LLM). Default: none, the failure policy applies. */
  readonly onStepFailed?: RecoveryHook;
}

/**
 * Where a step is in this session. `completed`-style outcomes use the core result statuses:
 * `succeeded | failed | skipped | denied | cancelled`.
 */
export type DagStepStatus =
  /** The session has not scheduled anything yet. */
  | 'pending'
  /** Waits for dependencies. */
  | 'blocked'
  /** Dependencies done; waits for a concurrency slot. */
  | 'ready'
  | 'running'
  /** Failed with a retryable error; waits out its backoff. */
  | 'retrying'
  /** Failed; the recovery hook is deciding. */
  | 'recovering'
  | StepStatus;

/** An overall summary, cheap enough to poll. */
export interface DagProgress {
  /** Steps with a final status. */
  readonly done: number;
  readonly total: number;
  /** Steps whose tool call is in flight. */
  readonly running: number;
}

/** The core run handle plus live progress. */
export interface DagRunHandle extends RunHandle {
  progress(): DagProgress;
  /** The live status of one step, or `undefined` for an unknown id (or before a resume has read the journal). */
  stepStatus(stepId: string): DagStepStatus | undefined;
}
