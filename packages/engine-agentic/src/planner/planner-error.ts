import { type ErrorCode, ErrorCodes, StepwiseError, type StepwiseErrorOptions } from '@stepwise/core';

/**
 * Codes of the planner's own failures. They extend core's E4xx family (the model loop) so a host
 * can switch on `error.code` the same way it does for the goal-step loop.
 */
export const PlannerErrorCodes = {
  /** The model's last answer held no JSON plan (neither a `submit_plan` call nor JSON text). */
  ANSWER_NOT_JSON: ErrorCodes.PLAN_ANSWER_NOT_JSON,
  /** Every repair was used and the plan still has problems (`details.problems`). */
  REPAIRS_EXHAUSTED: ErrorCodes.PLAN_REPAIRS_EXHAUSTED,
} as const;

/** A plan could not be made from the goal. `details` carries the attempts and the last problems. */
export class PlannerError extends StepwiseError {
  constructor(code: ErrorCode, message: string, options: StepwiseErrorOptions = {}) {
    super(code, message, options);
    this.name = 'PlannerError';
  }
}
