import { ErrorCodes, type StepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';

/**
 * Whether dependents may run after this result. A step that succeeded, or that a person or the
 * recovery hook chose to skip, lets them run; one that failed, was denied, was cancelled, waits
 * for a person or was skipped because of its own dependencies (E310) does not.
 */
export function letsDependentsRun(result: StepResult): boolean {
  return (
    result.status === 'succeeded' ||
    (result.status === 'skipped' && result.error?.code !== ErrorCodes.DEPENDENCY_FAILED)
  );
}

/** The step ended without running because it waits for a person's answer (E410). */
export function isWaiting(result: StepResult): boolean {
  return result.status === 'waiting';
}

/** Blocks dependents for good (as opposed to `cancelled` or `waiting`: the run stopped, or waits for an answer). */
export function blocksDependents(result: StepResult): boolean {
  return !letsDependentsRun(result) && result.status !== 'cancelled' && result.status !== 'waiting';
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
    case 'waiting':
      return 'waits for a person';
    default:
      return 'succeeded';
  }
}

export function dependencyError(stepId: string, message: string, details: Record<string, unknown>): StepError {
  return { code: ErrorCodes.DEPENDENCY_FAILED, message, retryable: false, location: stepId, details };
}
