/**
 * Stable error codes. Numbers come from the seed specification (E001–E304);
 * the rest extend the same scheme so a host can switch on `error.code` forever.
 */
export const ErrorCodes = {
  /** The plan failed validation; `details.problems` lists every problem. */
  PLAN_INVALID: 'E001',
  /** No authorization, or one that was never approved. */
  NOT_AUTHORIZED: 'E002',
  /** The authorization belongs to another plan id or another digest. */
  PLAN_MISMATCH: 'E003',
  /** Broken JSON or a configuration file that does not parse. */
  INPUT_INVALID: 'E004',
  /** A plan revision touches a step that already started. */
  PLAN_REVISION_CONFLICT: 'E005',
  /** Precondition failed: a file is missing. */
  PRECONDITION_FILE: 'E101',
  /** Precondition failed: the project marker (package.json, Cargo.toml, …) is missing. */
  PRECONDITION_PROJECT: 'E102',
  /** Precondition failed: a directory is missing. */
  PRECONDITION_DIRECTORY: 'E103',
  /** Precondition failed: any other checker (custom, unknown kind). */
  PRECONDITION_OTHER: 'E104',
  /** The tool is not registered (the whitelist). */
  TOOL_UNKNOWN: 'E201',
  /** Arguments are missing or fail the tool's input schema. */
  ARGUMENTS_INVALID: 'E202',
  /** A reference could not be resolved (missing output, bad pointer). */
  REFERENCE_UNRESOLVED: 'E203',
  /** The tool failed without a more specific code. */
  TOOL_FAILED: 'E300',
  /** The tool's target does not exist (file not found). */
  TOOL_NOT_FOUND: 'E301',
  /** The tool was refused by the operating system (permission denied). */
  TOOL_PERMISSION: 'E302',
  /** An executable is missing or not allowed. */
  TOOL_EXECUTABLE: 'E303',
  /** A command ran and exited non-zero. */
  TOOL_COMMAND_FAILED: 'E304',
  /** The tool returned output that fails its output schema. */
  TOOL_OUTPUT_INVALID: 'E305',
  /** The step exceeded its timeout. */
  STEP_TIMEOUT: 'E306',
  /** The step was cancelled (run cancelled, or a critical sibling failed). */
  STEP_CANCELLED: 'E307',
  /** An edit did not apply (search text matched zero or several times). */
  EDIT_CONFLICT: 'E308',
  /** A step was in flight when the process died and may not be run again. */
  STEP_INTERRUPTED: 'E309',
  /** A dependency failed, so the step was skipped. */
  DEPENDENCY_FAILED: 'E310',
  /** A workspace checkpoint would exceed its size or entry cap. */
  CHECKPOINT_TOO_LARGE: 'E311',
  /** A person or policy denied the approval. */
  APPROVAL_DENIED: 'E401',
  /** A path or command left the sandbox. */
  SANDBOX_VIOLATION: 'E402',
  /** Agentic: the step used all of its turns. */
  TURN_LIMIT: 'E403',
  /** Agentic: too many failed tool calls in one step. */
  TOOL_FAILURE_LIMIT: 'E404',
  /** Agentic: the step's token budget is spent. */
  TOKEN_BUDGET: 'E405',
  /** Agentic: the model reported the step blocked. */
  STEP_BLOCKED: 'E406',
  /** Agentic: the model endpoint failed (after retries for transient errors). */
  MODEL_ERROR: 'E407',
  /** Planner: the model's last answer held no JSON plan. */
  PLAN_ANSWER_NOT_JSON: 'E408',
  /** Planner: every repair was used and the plan still has problems. */
  PLAN_REPAIRS_EXHAUSTED: 'E409',
  /** The step waits for a person's answer to its approval request (approval mode `pause`); the run ends `waiting`. */
  APPROVAL_WAITING: 'E410',
  /** An answer was refused: the run is not waiting, the request is unknown or stale, or it was already answered. */
  ANSWER_REFUSED: 'E411',
  /** Store: another owner holds the run, or this lease's fencing token is stale. */
  LEASE_CONFLICT: 'E501',
  /** Store: events do not continue the journal (seq gap or duplicate). */
  JOURNAL_CONFLICT: 'E502',
  /** Store: the database cannot be opened, is corrupt or read-only. */
  STORE_UNAVAILABLE: 'E503',
  /** Store: the database was written by a newer version. */
  STORE_SCHEMA_NEWER: 'E504',
  /** The run does not exist (resume, show). */
  RUN_NOT_FOUND: 'E505',
  /** The run's journal is in a format this release does not read (`run-start`'s `journalVersion`). */
  JOURNAL_VERSION_UNSUPPORTED: 'E506',
  /** Configuration is invalid. */
  CONFIG_INVALID: 'E601',
  /** A plugin could not be loaded or collides with registered tools. */
  PLUGIN_INVALID: 'E602',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** What went wrong with a step, as it is journaled and returned. */
export interface StepError {
  readonly code: string;
  readonly message: string;
  /** A retryable error is transient: the same call may succeed later. */
  readonly retryable: boolean;
  /** Where the problem is, e.g. a JSON path into the plan or a file path. */
  readonly location?: string;
  readonly details?: Record<string, unknown>;
}

const marker = Symbol.for('stepwise.error');

export interface StepwiseErrorOptions {
  readonly retryable?: boolean;
  readonly location?: string;
  readonly details?: Record<string, unknown>;
  readonly cause?: unknown;
}

/**
 * Base class of every error Stepwise throws. `isInstance` checks a global symbol
 * rather than the prototype, so it works when a host ends up with two copies of core.
 */
export class StepwiseError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly location: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly [marker] = true;

  constructor(code: string, message: string, options: StepwiseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StepwiseError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.location = options.location;
    this.details = options.details;
  }

  static isInstance(value: unknown): value is StepwiseError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }

  toJSON(): StepError {
    return toStepError(this);
  }
}

/** Thrown by tools. `retryable` marks transient failures that engines may retry. */
export class ToolError extends StepwiseError {
  constructor(options: { code?: string; message: string } & StepwiseErrorOptions) {
    super(options.code ?? ErrorCodes.TOOL_FAILED, options.message, options);
    this.name = 'ToolError';
  }
}

/** A path or command that leaves the sandbox. Never retryable. */
export class SandboxViolation extends StepwiseError {
  constructor(message: string, options: { location?: string; details?: Record<string, unknown> } = {}) {
    super(ErrorCodes.SANDBOX_VIOLATION, message, {
      ...options,
      retryable: false,
    });
    this.name = 'SandboxViolation';
  }
}

/** Turns anything thrown into a StepError. Non-Stepwise errors are not retryable. */
export function toStepError(error: unknown, fallbackCode: string = ErrorCodes.TOOL_FAILED): StepError {
  if (StepwiseError.isInstance(error)) {
    return {
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      ...(error.location === undefined ? {} : { location: error.location }),
      ...(error.details === undefined ? {} : { details: error.details }),
    };
  }
  if (error instanceof Error) return { code: fallbackCode, message: error.message, retryable: false };
  return { code: fallbackCode, message: String(error), retryable: false };
}
