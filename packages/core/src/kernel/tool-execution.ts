import { ErrorCodes, messageOf, type StepError, StepwiseError, toStepError } from '../errors.js';
import { tooDeepMessage, tooDeepPath } from '../plan/nesting-depth.js';
import { plainJson, TooDeepForJson } from '../plan/plain-json.js';
import { toJsonPath } from '../plan/references.js';
import type { Artifact, ToolContext, ToolLogger } from '../tools/define-tool.js';
import { describeProcess } from '../tools/process-groups.js';
import { compileSchema, formatIssues, type SchemaResult } from '../tools/schema.js';
import type { AnyTool } from '../tools/tool-registry.js';
import { deriveIdempotencyKey } from './idempotency-key.js';
import type { KernelContext, ToolCallOutcome, ToolCallRequest } from './invoke-step.js';
import { signalWithTimeout, type TimedSignal } from './signal-with-timeout.js';

/** What one execution of a tool came to, before it is journaled. */
export interface Execution {
  readonly status: ToolCallOutcome['status'];
  readonly output?: unknown;
  readonly error?: StepError;
  readonly artifacts: Artifact[];
}

/** A signal that never aborts, shared by calls that have no run signal. */
export const neverAborted: AbortSignal = new AbortController().signal;

const noopLog: ToolLogger = () => undefined;

/**
 * The error of a step that ended `cancelled` (E307): the kernel's when the run's signal aborts a
 * call, the scheduler's when a stopped run ends the steps that never ran. `reason` is the abort
 * reason (an Error's message, a string, else "run cancelled").
 */
export function cancelledError(stepId: string, reason: unknown): StepError {
  const message = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'run cancelled';
  return {
    code: ErrorCodes.STEP_CANCELLED,
    message: `cancelled: ${message}`,
    retryable: false,
    location: stepId,
  };
}

/** Where a tool context keeps the plan revision its `idempotencyKey` is derived from. */
const KEY_REVISION = Symbol('idempotencyKeyRevision');

type KeyedContext = Omit<ToolContext, 'idempotencyKey'> & { readonly [KEY_REVISION]: number | undefined };

/**
 * `ctx.idempotencyKey`, one getter for every context: derived from the context's own ids, hashed
 * only when a tool asks (most tools never do).
 */
function idempotencyKeyOf(this: KeyedContext): string {
  const revision = this[KEY_REVISION];
  return revision === undefined ? this.executionId : deriveIdempotencyKey(this.runId, this.stepId, revision);
}

/**
 * An own, enumerable accessor whose getter every context shares, added last (an accessor replacing
 * an earlier property turns the object into a dictionary). Not a `get` in the object literal: that
 * makes a getter closure per call, which holds the whole run (request, kernel context, journal), in
 * an accessor pair V8 allocates in the old generation. Dead, the pair still kept its closure alive
 * through every scavenge until the next full collection, so every finished run was promoted: 11.4 KB
 * per one-step run on a reused engine instead of 4.1 (what the store keeps), each scavenge 2x longer.
 */
const IDEMPOTENCY_KEY: PropertyDescriptor = { get: idempotencyKeyOf, enumerable: true, configurable: true };

/** The `ctx` a tool's execute receives; artifacts it adds land in `artifacts`. */
function toolContextFor(call: RunningCall): ToolContext {
  const { request, context, artifacts } = call;
  const signal = call.guard.signal;
  const { journal } = context;
  const toolContext: KeyedContext = {
    signal,
    workspace: context.workspace,
    runId: context.runId,
    stepId: request.stepId,
    executionId: request.executionId,
    [KEY_REVISION]: request.revision,
    attempt: request.attempt,
    log: context.log ?? noopLog,
    addArtifact: (artifact) => artifacts.push(artifact),
    progress: (percent, message) => {
      journal.emit({
        type: 'progress-report',
        stepId: request.stepId,
        executionId: request.executionId,
        percent: Math.max(0, Math.min(100, percent)),
        ...(message === undefined ? {} : { message }),
      });
      journal.flush().catch(() => undefined);
    },
    output: (stream, text) => {
      checkLiveOutput(request.stepId, stream, text);
      // A tool that kept its context shows nothing once its call ended: the call's tail is gone.
      if (!call.ended) journal.live.toolOutput(request.stepId, request.executionId, stream, text);
    },
    recordProcess: async (process) => {
      journal.emit({
        type: 'process-start',
        stepId: request.stepId,
        executionId: request.executionId,
        ...describeProcess(process),
      });
      await journal.flush();
    },
  };
  return Object.defineProperty(toolContext, 'idempotencyKey', IDEMPOTENCY_KEY) as KeyedContext & ToolContext;
}

/** `ctx.output` takes `stdout` or `stderr` and a string; anything else is the tool's mistake (E004). */
function checkLiveOutput(stepId: string, stream: unknown, text: unknown): void {
  if ((stream === 'stdout' || stream === 'stderr') && typeof text === 'string') return;
  throw new StepwiseError(
    ErrorCodes.INPUT_INVALID,
    `ctx.output takes a stream ('stdout' or 'stderr') and a string (got ${typeof stream === 'string' ? JSON.stringify(stream) : typeof stream} and ${typeof text})`,
    { location: stepId },
  );
}

/** A call its timeout ended: safe to try again only if a half-finished call does no harm. */
function timedOut(
  request: ToolCallRequest,
  tool: AnyTool,
  timeoutMs: number | undefined,
  artifacts: Artifact[],
): Execution {
  return {
    status: 'failed',
    error: {
      code: ErrorCodes.STEP_TIMEOUT,
      message: `${tool.name} timed out after ${timeoutMs} ms`,
      retryable: tool.idempotent,
      location: request.stepId,
    },
    artifacts,
  };
}

function cancelled(request: ToolCallRequest, reason: unknown, artifacts: Artifact[]): Execution {
  return { status: 'cancelled', error: cancelledError(request.stepId, reason), artifacts };
}

/** One tool call in `executeTool`: what its continuations need. */
interface RunningCall {
  readonly request: ToolCallRequest;
  readonly tool: AnyTool;
  readonly context: KernelContext;
  readonly signal: AbortSignal;
  readonly guard: TimedSignal;
  readonly timeoutMs: number | undefined;
  readonly artifacts: Artifact[];
  /** Set by `endCall`: the tool's context shows no more live output once its call ended. */
  ended: boolean;
}

/**
 * Runs the tool with its timeout and the run's signal, then validates its output. Never throws:
 * a throw, a timeout, a cancellation and an invalid output all become an `Execution`. A tool that
 * returns a value (not a promise) whose output checks synchronously gets its `Execution` back
 * synchronously: most steps' tools, which would otherwise pay a promise and a turn per layer.
 */
export function executeTool(
  request: ToolCallRequest,
  tool: AnyTool,
  args: Record<string, unknown>,
  context: KernelContext,
  signal: AbortSignal,
): Execution | Promise<Execution> {
  const artifacts: Artifact[] = [];
  const timeoutMs = request.timeoutMs ?? tool.timeoutMs ?? context.defaultTimeoutMs;
  // Without a timeout the run's own signal is the tool's signal: no controller, no listener, no race.
  const guard = signalWithTimeout(
    signal,
    timeoutMs,
    () => new StepwiseError(ErrorCodes.STEP_TIMEOUT, `${tool.name} timed out after ${timeoutMs} ms`),
  );
  const call: RunningCall = { request, tool, context, signal, guard, timeoutMs, artifacts, ended: false };
  let execution: Execution | Promise<Execution>;
  try {
    const returned: unknown = tool.execute(args, toolContextFor(call));
    if (isThenable(returned)) return awaitTool(call, returned);
    // A synchronous tool has finished already: nothing to race, nothing to interrupt.
    execution = afterTool(call, returned);
  } catch (thrown) {
    execution = thrownExecution(call, thrown);
  }
  if (execution instanceof Promise) return awaitCheck(call, execution);
  endCall(call);
  return execution;
}

/** The tool returned a promise: raced against the signal unless it can never abort. */
async function awaitTool(call: RunningCall, returned: PromiseLike<unknown>): Promise<Execution> {
  const { request, tool, signal, guard, timeoutMs, artifacts } = call;
  try {
    if (guard.signal === neverAborted) return await afterTool(call, await returned);
    const raced = await raceAbort(Promise.resolve(returned), guard.signal);
    if (raced.kind === 'done') return await afterTool(call, raced.value);
    const fenced = call.context.journal.fencedBy();
    if (fenced !== undefined) return cancelled(request, fenced, artifacts);
    return signal.aborted
      ? cancelled(request, signal.reason, artifacts)
      : timedOut(request, tool, timeoutMs, artifacts);
  } catch (thrown) {
    return thrownExecution(call, thrown);
  } finally {
    endCall(call);
  }
}

/** An output schema that checks asynchronously (a zod async refinement). */
async function awaitCheck(call: RunningCall, checking: Promise<Execution>): Promise<Execution> {
  try {
    return await checking;
  } catch (thrown) {
    return thrownExecution(call, thrown);
  } finally {
    endCall(call);
  }
}

/**
 * The tool finished with `value`. A result that comes once the run's lease is lost (from a tool
 * that ignored its signal) is refused: another owner may hold the run, and the journal takes nothing more.
 */
function afterTool(call: RunningCall, value: unknown): Execution | Promise<Execution> {
  const fenced = call.context.journal.fencedBy();
  if (fenced !== undefined) return cancelled(call.request, fenced, call.artifacts);
  return checkOutput(call.request, call.tool, value, call.artifacts);
}

function thrownExecution(call: RunningCall, thrown: unknown): Execution {
  const { request, tool, signal, guard, timeoutMs, artifacts } = call;
  if (signal.aborted) return cancelled(request, signal.reason, artifacts);
  if (guard.timedOut) return timedOut(request, tool, timeoutMs, artifacts);
  return { status: 'failed', error: toStepError(thrown), artifacts };
}

/** Once, however the call ended: its timer and listener go, its live output ends. */
function endCall(call: RunningCall): void {
  call.ended = true;
  call.guard.dispose();
  call.context.journal.live.endExecution(call.request.executionId);
}

/**
 * Validates a tool's output: that it is JSON data no deeper than MAX_NESTING_DEPTH (read once into a
 * plain copy, `plainJson`), then its `output` schema; E305 when it fails. What succeeds is that copy:
 * the journal, the store and the result never see the tool's own object. Synchronous unless the
 * schema checks asynchronously.
 */
export function checkOutput(
  request: Pick<ToolCallRequest, 'stepId'>,
  tool: AnyTool,
  output: unknown,
  artifacts: Artifact[],
): Execution | Promise<Execution> {
  let plain: unknown;
  try {
    plain = plainJson(output);
  } catch (error) {
    return { status: 'failed', error: unplainError(request, tool, output, error), artifacts };
  }
  if (!tool.output) return { status: 'succeeded', output: plain, artifacts };
  const checked = compileSchema(tool.output).validate(plain);
  if (checked instanceof Promise)
    return checked.then((result) => outputChecked(request, tool, plain, artifacts, result));
  return outputChecked(request, tool, plain, artifacts, checked);
}

/** E305 for an output `plainJson` refused: too deep (with the path to it), or not JSON data. */
function unplainError(
  request: Pick<ToolCallRequest, 'stepId'>,
  tool: AnyTool,
  output: unknown,
  error: unknown,
): StepError {
  const invalid = `${tool.name} returned invalid output`;
  const location = `${request.stepId}/output`;
  if (!(error instanceof TooDeepForJson)) {
    return {
      code: ErrorCodes.TOOL_OUTPUT_INVALID,
      message: `${invalid}: it cannot be kept as JSON data (${messageOf(error)})`,
      retryable: false,
      location,
    };
  }
  // Refused whole: the journal, the stores and a later step's references all walk it by recursion.
  let path: (string | number)[] | undefined;
  try {
    path = tooDeepPath(output);
  } catch {
    // An output whose members can no longer be read: the error points at the output itself.
  }
  return {
    code: ErrorCodes.TOOL_OUTPUT_INVALID,
    message: `${invalid}: ${tooDeepMessage('output too deep')}`,
    retryable: false,
    location: `${location}${path ? toJsonPath(path) : ''}`,
  };
}

function outputChecked(
  request: Pick<ToolCallRequest, 'stepId'>,
  tool: AnyTool,
  output: unknown,
  artifacts: Artifact[],
  checked: SchemaResult<unknown>,
): Execution {
  if (checked.ok) return { status: 'succeeded', output, artifacts };
  return {
    status: 'failed',
    output,
    error: {
      code: ErrorCodes.TOOL_OUTPUT_INVALID,
      message: `${tool.name} returned invalid output: ${formatIssues(checked.issues)}`,
      retryable: false,
      location: `${request.stepId}/output${checked.issues[0]?.path ?? ''}`,
    },
    artifacts,
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Settles when the tool settles or `signal` aborts, whichever is first: a tool may ignore its
 * signal, the kernel does not wait for it. The listener is removed either way.
 */
export async function raceAbort<T>(
  running: Promise<T>,
  signal: AbortSignal,
): Promise<{ kind: 'done'; value: T } | { kind: 'interrupted' }> {
  if (signal.aborted) {
    // The abandoned call may still reject later; that must not become an unhandled rejection.
    running.catch(() => undefined);
    return { kind: 'interrupted' };
  }
  let onAbort: (() => void) | undefined;
  const interrupted = new Promise<{ kind: 'interrupted' }>((resolve) => {
    onAbort = () => resolve({ kind: 'interrupted' });
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([running.then((value) => ({ kind: 'done' as const, value })), interrupted]);
  } finally {
    signal.removeEventListener('abort', onAbort as () => void);
  }
}
