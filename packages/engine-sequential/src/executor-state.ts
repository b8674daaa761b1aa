import type { Plan, RunResult, StepResult } from '@stepwise/core';

interface StateBase {
  /**
   * Index of the step to run next (or running now). Invariant: `completedSteps.length === currentStep`.
   * In `completed` it equals `totalSteps`; in `failed` it is the index of the step that failed.
   */
  readonly currentStep: number;
  readonly totalSteps: number;
  /** Results of the steps that succeeded, in plan order. */
  readonly completedSteps: readonly StepResult[];
}

/** No plan loaded. */
export interface IdleState extends StateBase {
  readonly status: 'idle';
}

/** A validated, authorized plan is loaded; nothing has run in this executor yet. */
export interface PlanLoadedState extends StateBase {
  readonly status: 'plan-loaded';
  readonly runId: string;
  readonly planId: string;
}

/** Step `currentStep + 1` of `totalSteps` is running (`running`) or is the next to run. */
export interface StepRunningState extends StateBase {
  readonly status: 'step-running';
  readonly runId: string;
  readonly planId: string;
  /** Id of the step at `currentStep`. */
  readonly stepId: string;
  /** True while the kernel works on the step; false between steps when stepping with `executeStep`. */
  readonly running: boolean;
}

/** Every step succeeded. */
export interface CompletedState extends StateBase {
  readonly status: 'completed';
  readonly runId: string;
  readonly planId: string;
  readonly result: RunResult;
  /** True when the result was read back from the store (the approval was already used). */
  readonly replayed: boolean;
}

/** The run stopped at a step that did not succeed, was cancelled, or could not be journaled. */
export interface FailedState extends StateBase {
  readonly status: 'failed';
  readonly runId: string;
  readonly planId: string;
  /** The result of the step that stopped the run, when one did. */
  readonly failedStep: StepResult | undefined;
  /** The run's result; absent when the store refused the journal (then `error` says why). */
  readonly result: RunResult | undefined;
  readonly error: unknown;
  readonly replayed: boolean;
}

/** The executor's explicit state machine: `idle → plan-loaded → step-running → completed | failed`. */
export type ExecutorState = IdleState | PlanLoadedState | StepRunningState | CompletedState | FailedState;

export type ExecutorStatus = ExecutorState['status'];

export const IDLE_STATE: IdleState = Object.freeze({
  status: 'idle',
  currentStep: 0,
  totalSteps: 0,
  completedSteps: Object.freeze([]) as readonly StepResult[],
});

/** The executor's own record of where it is; `snapshotState` turns it into an ExecutorState. */
export type Phase =
  | { readonly status: 'idle' }
  | { readonly status: 'plan-loaded' }
  | { readonly status: 'step-running'; readonly running: boolean }
  | { readonly status: 'completed'; readonly result: RunResult }
  | {
      readonly status: 'failed';
      readonly failedStep: StepResult | undefined;
      readonly result: RunResult | undefined;
      readonly error: unknown;
    };

/**
 * A frozen state; `completed` is copied so later steps do not change it. `plan` is unknown only
 * while (or because) loading a run for resume failed.
 */
export function snapshotState(
  phase: Phase,
  run: {
    readonly runId: string;
    readonly plan: Plan | undefined;
    readonly completed: readonly StepResult[];
    readonly replayed: boolean;
  },
): ExecutorState {
  const { runId, plan, completed, replayed } = run;
  const base = {
    runId,
    planId: plan?.id ?? '',
    totalSteps: plan?.steps.length ?? 0,
    currentStep: completed.length,
    completedSteps: Object.freeze(completed.slice()),
  };
  switch (phase.status) {
    case 'idle':
      return IDLE_STATE;
    case 'plan-loaded':
      return Object.freeze({ status: 'plan-loaded', ...base });
    case 'step-running':
      return Object.freeze({
        status: 'step-running',
        ...base,
        stepId: plan?.steps[completed.length]?.id ?? '',
        running: phase.running,
      });
    case 'completed':
      return Object.freeze({ status: 'completed', ...base, result: phase.result, replayed });
    case 'failed':
      return Object.freeze({
        status: 'failed',
        ...base,
        failedStep: phase.failedStep,
        result: phase.result,
        error: phase.error,
        replayed,
      });
  }
}
