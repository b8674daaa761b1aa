import { tooDeepMessage } from './plan/nesting-depth.js';
import { plainJson, TooDeepForJson } from './plan/plain-json.js';

/**
 * Stable error codes, `E` and three digits, grouped by family: E0xx the plan and its input, E1xx
 * preconditions, E2xx the call (tool, arguments, references), E3xx the tool and the step, E4xx
 * approvals, the sandbox, the model loop and the planner, E5xx the store, E6xx configuration. A code never changes
 * meaning, so a host can switch on `error.code` across releases.
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
  /** The run's journal does not match its hash chain (or its projections its journal): it was changed outside Stepwise. */
  JOURNAL_TAMPERED: 'E507',
  /** The run has ended (completed, failed, partial or cancelled): there is nothing left to cancel. */
  RUN_ENDED: 'E508',
  /** Configuration is invalid. */
  CONFIG_INVALID: 'E601',
  /** A plugin could not be loaded or collides with registered tools. */
  PLUGIN_INVALID: 'E602',
} as const;

/** A code core defines: one of the values of `ErrorCodes`. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/**
 * A code a tool defines for a failure of its own (`new ToolError({ code: 'E350', … })`): `E` and
 * digits like core's codes, so a step's `retry.on` can name it. Take a number `ErrorCodes` does not
 * use, in the family that fits (E3xx: the tool failed). Every code an error carries is an
 * `ErrorCode | CustomErrorCode`; compare it with members of `ErrorCodes` to narrow it.
 */
export type CustomErrorCode = `E${number}`;

/** Core's store codes (E5xx): the store refused the journal, or cannot serve the run. */
export type StoreErrorCode = Extract<ErrorCode, `E5${string}`>;

/** Derived from `ErrorCodes`, so a store code added there is a store code here too. */
const STORE_ERROR_CODES: ReadonlySet<string> = new Set<string>(
  Object.values(ErrorCodes).filter((code) => code.startsWith('E5')),
);

/** What went wrong with a step, as it is journaled and returned. */
export interface StepError {
  /** One of `ErrorCodes`, or a tool's own code (see `CustomErrorCode`). */
  readonly code: ErrorCode | CustomErrorCode;
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
  readonly code: ErrorCode | CustomErrorCode;
  readonly retryable: boolean;
  readonly location: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly [marker] = true;

  constructor(code: ErrorCode | CustomErrorCode, message: string, options: StepwiseErrorOptions = {}) {
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

  /** The error as a step result and the journal carry it (what `toStepError` returns for it). */
  toJSON(): StepError {
    return {
      code: this.code,
      message: this.message,
      retryable: this.retryable,
      ...(this.location === undefined ? {} : { location: this.location }),
      ...(this.details === undefined ? {} : { details: this.details }),
    };
  }
}

/**
 * Thrown by tools. `code` defaults to E300; a tool may use its own (see `CustomErrorCode`).
 * `retryable` marks transient failures that engines may retry.
 */
export class ToolError extends StepwiseError {
  constructor(options: { code?: ErrorCode | CustomErrorCode; message: string } & StepwiseErrorOptions) {
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

/**
 * The text of anything thrown, for a message or a log line; never throws itself. A thrown value can
 * be an object without a prototype (nothing to turn it into a string), a proxy, or an error whose
 * `message` getter or `toString` throws: explaining an error must not raise another.
 */
export function messageOf(error: unknown): string {
  try {
    return String(error instanceof Error ? error.message : error);
  } catch {
    return `(a thrown ${typeof error} that cannot be shown as text)`;
  }
}

/**
 * Turns anything thrown into a StepError, never throwing. Non-Stepwise errors are not retryable. A
 * StepwiseError's fields are read once and checked, since a tool's error class may be anything: a
 * code that is not `E` and digits becomes `fallbackCode`, a `retryable` that is not `true` is false,
 * a `location` that is not a string is left out, and `details` are kept as plain JSON data (left
 * out, and said so in the message, when JSON cannot hold them, they nest too deep or hold too many
 * values). An error whose fields cannot be read at all is described as any thrown value.
 */
export function toStepError(
  error: unknown,
  fallbackCode: ErrorCode | CustomErrorCode = ErrorCodes.TOOL_FAILED,
): StepError {
  try {
    if (StepwiseError.isInstance(error)) {
      const json: unknown = error.toJSON();
      if (typeof json === 'object' && json !== null) return checkedStepError(json, fallbackCode);
    }
  } catch {
    // Described below, as a value that is not a StepwiseError.
  }
  return { code: fallbackCode, message: messageOf(error), retryable: false };
}

const ERROR_CODE = /^E\d+$/;

function checkedStepError(json: object, fallbackCode: ErrorCode | CustomErrorCode): StepError {
  const { code, message, retryable, location, details } = json as Partial<Record<keyof StepError, unknown>>;
  let text = typeof message === 'string' ? message : messageOf(message);
  let plainDetails: unknown;
  if (details !== undefined) {
    try {
      plainDetails = plainJson(details);
    } catch (error) {
      const reason = error instanceof TooDeepForJson ? tooDeepMessage('details') : messageOf(error);
      text += ` (its details were left out: ${reason})`;
    }
  }
  return {
    code: typeof code === 'string' && ERROR_CODE.test(code) ? (code as CustomErrorCode) : fallbackCode,
    message: text,
    retryable: retryable === true,
    ...(typeof location === 'string' ? { location } : {}),
    ...(typeof plainDetails === 'object' && plainDetails !== null && !Array.isArray(plainDetails)
      ? { details: plainDetails as Record<string, unknown> }
      : {}),
  };
}

/**
 * True for an error of the store (E5xx: a refused append, a lost lease, an unavailable database, an
 * unknown run): nothing more of the run can be journaled, so a caller that would record a failure
 * lets it propagate instead.
 */
export function isStoreError(error: unknown): error is StepwiseError & { readonly code: StoreErrorCode } {
  return StepwiseError.isInstance(error) && STORE_ERROR_CODES.has(error.code);
}

/** True when another owner holds the run, or this lease's fencing token is stale (E501): wait or give up, never write. */
export function isLeaseConflict(
  error: unknown,
): error is StepwiseError & { readonly code: typeof ErrorCodes.LEASE_CONFLICT } {
  return StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT;
}
