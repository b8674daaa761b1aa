import type { Step } from '@stepwise/core';
import type { GoalStepRequest } from '@stepwise/core/engine';
import type { Outcome } from './goal-step-session.js';

/** How one attempt of a goal step ends before its `step-end`: `succeeded`, `failed`… with output or error. */
export type GoalAttemptOutcome = Outcome;

/** What `begin` hands the attempt: the step as the model sees it, or an outcome that replaces the model loop. */
export interface GoalAttemptStart {
  /** The step this attempt carries out (for example, with what went wrong before in its description). */
  readonly step?: Step;
  /** The attempt's outcome without a model loop (for example, an attempt a crash interrupted, to be checked as left). */
  readonly outcome?: GoalAttemptOutcome;
}

/**
 * Work around each attempt of a goal step, inside the step (after the scheduler journaled its
 * `step-start`, before the kernel journals its `step-end`): a transaction over the workspace, a
 * validation that decides whether the attempt stands. Their journal entries belong to the attempt.
 */
export interface GoalAttemptHooks {
  /** Before the model loop. A throw fails the attempt (its error, not retryable) and `end` is not called. */
  begin?(request: GoalStepRequest): Promise<GoalAttemptStart> | GoalAttemptStart;
  /** After the model loop (or the outcome `begin` gave): the attempt's outcome as journaled. A throw fails it. */
  end?(request: GoalStepRequest, outcome: GoalAttemptOutcome, signal: AbortSignal): Promise<GoalAttemptOutcome>;
}
