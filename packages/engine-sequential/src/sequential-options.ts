import type { EngineOptions, RunEvent, Step, StepResult } from '@stepwise/core';

/** Where a step sits in its plan: `index` is 0-based, `total` is the plan's step count. */
export interface StepPosition {
  readonly index: number;
  readonly total: number;
}

/**
 * Progress callbacks. They are called in step order, never
 * concurrently; one that throws is logged and ignored, so a display bug cannot change a run.
 */
export interface StepCallbacks {
  /** Before the kernel checks the step's preconditions and approval and calls its tool. */
  readonly onStepStart?: (step: Step, position: StepPosition) => void;
  /** After a step succeeded and its `step-end` is durable. */
  readonly onStepComplete?: (result: StepResult, position: StepPosition) => void;
  /** After a step failed, was denied or skipped, or was cancelled; the run stops after it. */
  readonly onStepFailed?: (result: StepResult, position: StepPosition) => void;
}

/**
 * Options of `sequentialEngine` and `createSequentialExecutor`: the core `EngineOptions`
 * (tools, store, workspace, approvals, redactor, owner, leaseTtlMs, defaultTimeoutMs,
 * allowRerunInterrupted, onEvent, log) plus the step callbacks.
 */
export interface SequentialEngineOptions extends EngineOptions, StepCallbacks {
  /**
   * A plan revised while it runs (`handle.revise`) without an approval of the new digest: `wait`
   * (default) journals the revision, lets the step in flight finish and ends the run `waiting`;
   * resume it with `{ authorization: approvePlan(revisedPlan, …) }`. `fail` ends the run `failed`.
   */
  readonly revisionApproval?: 'wait' | 'fail';
}

/** Executor options: the engine's, plus the per-run signal and event listener. */
export interface SequentialExecutorOptions extends SequentialEngineOptions {
  /** Aborting it cancels the run: the step in flight is cancelled and no further step starts. */
  readonly signal?: AbortSignal;
  /** Called with every event after it is durable, in addition to `onEvent`. */
  readonly onRunEvent?: (event: RunEvent) => void;
}
