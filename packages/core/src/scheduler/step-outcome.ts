import { ErrorCodes, type StepError } from '../errors.js';
import type { StepResult } from '../events.js';

/**
 * Whether dependents may run after this result. A step that succeeded, or that a person or the
 * recovery hook chose to skip, lets them run; one that failed, was denied, was cancelled or was
 * skipped because of its own dependencies (E310) does not.
 */
export function letsDependentsRun(result: StepResult): boolean {
  return (
    result.status === 'succeeded' ||
    (result.status === 'skipped' && result.error?.code !== ErrorCodes.DEPENDENCY_FAILED)
  );
}

/** The step ended without running because its approval waits for a person (E410). */
export function isWaiting(result: StepResult): boolean {
  return result.status === 'cancelled' && result.error?.code === ErrorCodes.APPROVAL_WAITING;
}

/** Blocks dependents for good (as opposed to `cancelled`, which only says the run stopped). */
export function blocksDependents(result: StepResult): boolean {
  return !letsDependentsRun(result) && result.status !== 'cancelled';
}

/** "failed", "was denied"… for messages about a dependency. */
export function describeOutcome(result: StepResult): string {
  switch (result.status) {
    case 'failed':
      return 'failed';
    case 'denied':
      return 'was denied';
    case 'cancelled':
      return 'was cancelled';
    case 'skipped':
      return 'was skipped';
    default:
      return 'succeeded';
  }
}

export function dependencyError(stepId: string, message: string, details: Record<string, unknown>): StepError {
  return { code: ErrorCodes.DEPENDENCY_FAILED, message, retryable: false, location: stepId, details };
}

export function cancelledError(stepId: string, reason: string): StepError {
  return { code: ErrorCodes.STEP_CANCELLED, message: `cancelled: ${reason}`, retryable: false, location: stepId };
}
