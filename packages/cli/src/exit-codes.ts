import { ErrorCodes, type RunResult, type StepResult, StepwiseError } from '@stepwise/core';

/** Process exit codes of `stepwise`: 0 done, 1 general, 2 invalid input, 3x a step failed and why. */
export const ExitCodes = {
  /** Every step completed. */
  COMPLETED: 0,
  /** Anything else: the store failed, the run was cancelled, an unexpected error. */
  GENERAL_FAILURE: 1,
  /** The plan, the configuration, an argument or a file is invalid or missing. */
  INVALID_INPUT: 2,
  /** A step failed. */
  STEP_FAILED: 30,
  /** An agentic step used all of its turns (E403). */
  TURN_LIMIT: 31,
  /** A path or command left the sandbox (E402). */
  SANDBOX_VIOLATION: 32,
  /** A person or the policy denied an approval (E401). */
  APPROVAL_DENIED: 33,
  /** A step exceeded its timeout (E306). */
  STEP_TIMEOUT: 34,
  /** The run waits for a person's answer (approval mode `pause`): `stepwise respond`, then `stepwise resume`. */
  WAITING: 35,
} as const;

export type ExitCode = (typeof ExitCodes)[keyof typeof ExitCodes];

const BY_ERROR_CODE: Readonly<Record<string, ExitCode>> = {
  [ErrorCodes.ANSWER_REFUSED]: ExitCodes.INVALID_INPUT,
  [ErrorCodes.TURN_LIMIT]: ExitCodes.TURN_LIMIT,
  [ErrorCodes.SANDBOX_VIOLATION]: ExitCodes.SANDBOX_VIOLATION,
  [ErrorCodes.APPROVAL_DENIED]: ExitCodes.APPROVAL_DENIED,
  [ErrorCodes.STEP_TIMEOUT]: ExitCodes.STEP_TIMEOUT,
};

/** Errors that mean "what you gave me is wrong" rather than "something broke". */
const INPUT_ERROR_CODES: ReadonlySet<string> = new Set([
  ErrorCodes.PLAN_INVALID,
  ErrorCodes.NOT_AUTHORIZED,
  ErrorCodes.PLAN_MISMATCH,
  ErrorCodes.INPUT_INVALID,
  ErrorCodes.TOOL_UNKNOWN,
  ErrorCodes.ARGUMENTS_INVALID,
  ErrorCodes.REFERENCE_UNRESOLVED,
  ErrorCodes.RUN_NOT_FOUND,
  ErrorCodes.CONFIG_INVALID,
  ErrorCodes.PLUGIN_INVALID,
]);

/**
 * The step whose failure decides the exit code: the first to fail, in the order the steps started.
 * A step someone skipped at an approval prompt counts (as not approved); steps skipped because a
 * dependency failed, and steps cancelled, do not.
 */
function decisiveFailure(steps: readonly StepResult[]): StepResult | undefined {
  return steps
    .filter(
      (step) =>
        step.status === 'failed' ||
        step.status === 'denied' ||
        (step.status === 'skipped' && step.error?.code === ErrorCodes.APPROVAL_DENIED),
    )
    .filter((step) => step.error)
    .filter(
      (step) => step.error?.code !== ErrorCodes.STEP_CANCELLED && step.error?.code !== ErrorCodes.DEPENDENCY_FAILED,
    )
    .sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt))[0];
}

/**
 * The exit code for a finished run: 0 when it completed; for a failed or partial run the code
 * of its first failing step (31–34 for the specific causes, else 30); 1 when it was cancelled
 * without a failing step.
 */
export function exitCodeForResult(result: Pick<RunResult, 'status' | 'steps'>): ExitCode {
  if (result.status === 'completed') return ExitCodes.COMPLETED;
  if (result.status === 'waiting') return ExitCodes.WAITING;
  const failure = decisiveFailure(result.steps);
  if (failure?.error) return BY_ERROR_CODE[failure.error.code] ?? ExitCodes.STEP_FAILED;
  if (result.status === 'failed' || result.status === 'partial') return ExitCodes.STEP_FAILED;
  return ExitCodes.GENERAL_FAILURE;
}

/** The exit code for an error thrown before or instead of a run result. */
export function exitCodeForError(error: unknown): ExitCode {
  if (StepwiseError.isInstance(error)) {
    if (INPUT_ERROR_CODES.has(error.code)) return ExitCodes.INVALID_INPUT;
    return BY_ERROR_CODE[error.code] ?? ExitCodes.GENERAL_FAILURE;
  }
  return ExitCodes.GENERAL_FAILURE;
}
