import { type ApprovalOptions, approvalModeFor } from './approval.js';
import type { Artifact, Effect, ToolContext, ToolLogger } from './define-tool.js';
import { ErrorCodes, type StepError, StepwiseError, toStepError } from './errors.js';
import type { StepResult, ToolCallEvent, ToolResultEvent } from './events.js';
import { isoNow, type RunJournal } from './journal.js';
import { answerOrWait, type JournaledAnswers, waitingError } from './pause-approval.js';
import { deriveExecutionId } from './plan-digest.js';
import type { Precondition, Step } from './plan-schema.js';
import { describeProcess } from './process-groups.js';
import { resolveReferences } from './references.js';
import { compileSchema, formatIssues } from './schema.js';
import type { ToolRegistry } from './tool-registry.js';

/** What the kernel needs from the engine that calls it. */
export interface KernelContext {
  readonly runId: string;
  readonly journal: RunJournal;
  readonly registry: ToolRegistry;
  readonly workspace?: string;
  /** The run's signal: aborting it cancels the step. */
  readonly signal?: AbortSignal;
  readonly approvals?: ApprovalOptions;
  /** Used when neither the step nor the tool sets a timeout. Default: none. */
  readonly defaultTimeoutMs?: number;
  readonly log?: ToolLogger;
  /** Answers to `pause` approvals, journaled by `respond()` (a resumed waiting run). */
  readonly answers?: JournaledAnswers;
}

export interface StepInvocation {
  readonly attempt: number;
  /** `resolve` (permissive engines) replaces references with outputs; `literal` passes args as written. */
  readonly references: 'resolve' | 'literal';
  /** Outputs of finished steps, for reference resolution. */
  readonly outputs?: ReadonlyMap<string, unknown>;
  /** Replaces the step's args (a recovery hook's retry with new args). */
  readonly args?: Record<string, unknown>;
}

/** The outcome of one tool call, before it becomes a StepResult (agentic steps make many). */
export interface ToolCallOutcome {
  readonly status: 'succeeded' | 'failed' | 'denied' | 'skipped' | 'cancelled';
  readonly output?: unknown;
  readonly error?: StepError;
  readonly artifacts: readonly Artifact[];
  readonly executionId: string;
  readonly durationMs: number;
  /** True once the tool's execute was entered (a `tool-call` is journaled). */
  readonly called: boolean;
}

export interface ToolCallRequest {
  readonly stepId: string;
  readonly tool: string | undefined;
  readonly args: Record<string, unknown>;
  readonly attempt: number;
  readonly executionId: string;
  readonly preconditions?: readonly Precondition[];
  readonly requiresApproval?: boolean;
  readonly timeoutMs?: number;
  readonly description?: string;
  /** Agentic: the model turn asking for this call. */
  readonly turn?: number;
}

const noopLog: ToolLogger = () => undefined;

/** Optional keys of hot-path objects are assigned after the literal: no conditional spreads. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

function failure(
  request: ToolCallRequest,
  status: ToolCallOutcome['status'],
  error: StepError,
  started: number,
): ToolCallOutcome {
  return {
    status,
    error,
    artifacts: [],
    executionId: request.executionId,
    durationMs: performance.now() - started,
    called: false,
  };
}

/**
 * Calls one tool: whitelist → argument validation → preconditions → approval →
 * journal `tool-call` → execute with timeout and signal → output validation → journal `tool-result`.
 * The only place a tool's `execute` is ever called. Never throws for tool problems.
 */
export async function callTool(request: ToolCallRequest, context: KernelContext): Promise<ToolCallOutcome> {
  const started = performance.now();
  const { journal } = context;
  const tool = request.tool === undefined ? undefined : context.registry.get(request.tool);
  if (!tool) {
    return failure(
      request,
      'failed',
      {
        code: ErrorCodes.TOOL_UNKNOWN,
        message: `tool "${request.tool ?? ''}" is not registered`,
        retryable: false,
        location: `${request.stepId}/tool`,
      },
      started,
    );
  }

  let validated = compileSchema(tool.input).validate(request.args);
  if (validated instanceof Promise) validated = await validated;
  if (!validated.ok) {
    return failure(
      request,
      'failed',
      {
        code: ErrorCodes.ARGUMENTS_INVALID,
        message: `invalid arguments for ${tool.name}: ${formatIssues(validated.issues)}`,
        retryable: false,
        location: `${request.stepId}/args${validated.issues[0]?.path ?? ''}`,
        details: { issues: validated.issues },
      },
      started,
    );
  }

  const signal = context.signal ?? neverAborted;
  if (request.preconditions && request.preconditions.length > 0) {
    const checked = await context.registry.preconditions.check(request.preconditions, {
      workspace: context.workspace,
      runId: context.runId,
      stepId: request.stepId,
      signal,
    });
    if (!checked.ok) {
      return failure(
        request,
        'failed',
        {
          code: checked.code,
          message: `precondition ${request.preconditions[checked.index]?.kind} failed: ${checked.message}`,
          retryable: false,
          location: `${request.stepId}/preconditions/${checked.index}`,
        },
        started,
      );
    }
  }

  const approval = approvalModeFor(
    context.approvals?.policy,
    tool.name,
    tool.effect,
    request.requiresApproval ?? false,
  );
  if (approval.mode !== 'auto') {
    const decided = await decideApproval(
      request,
      context,
      tool.name,
      tool.effect,
      { mode: approval.mode, reason: approval.reason },
      validated.value,
      signal,
    );
    if (decided.decision === 'waiting') {
      return failure(request, 'cancelled', waitingError(request.stepId, tool.name), started);
    }
    if (decided.decision !== 'approved') {
      const status = decided.decision === 'skipped' ? 'skipped' : 'denied';
      return failure(
        request,
        status,
        {
          code: ErrorCodes.APPROVAL_DENIED,
          message: `${tool.name} was ${status === 'skipped' ? 'skipped' : 'denied'}${decided.reason ? `: ${decided.reason}` : ''}`,
          retryable: false,
          location: `${request.stepId}`,
        },
        started,
      );
    }
  }

  // A run cancelled while this call waited (approval, preconditions) never starts the tool.
  if (signal.aborted) return failure(request, 'cancelled', cancelledError(request.stepId, signal.reason), started);

  const startedAt = isoNow();
  const call: Writable<Omit<ToolCallEvent, 'runId' | 'seq' | 'at'>> = {
    type: 'tool-call',
    stepId: request.stepId,
    executionId: request.executionId,
    attempt: request.attempt,
    tool: tool.name,
    effect: tool.effect,
    idempotent: tool.idempotent,
    args: validated.value as Record<string, unknown>,
  };
  if (request.turn !== undefined) call.turn = request.turn;
  journal.emit(call);
  // Durable before the tool runs: a crash from here on leaves evidence for resume.
  await journal.flush();

  const artifacts: Artifact[] = [];
  const timeoutMs = request.timeoutMs ?? tool.timeoutMs ?? context.defaultTimeoutMs;
  // Without a timeout the run's own signal is the tool's signal: no controller, no listener, no race.
  const guard = timeoutMs === undefined ? undefined : watchTimeout(signal, timeoutMs, tool.name);
  const toolSignal = guard?.signal ?? signal;
  const toolContext: ToolContext = {
    signal: toolSignal,
    workspace: context.workspace,
    runId: context.runId,
    stepId: request.stepId,
    executionId: request.executionId,
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

  let status: ToolCallOutcome['status'];
  let output: unknown;
  let error: StepError | undefined;
  const timedOut = (): StepError => ({
    code: ErrorCodes.STEP_TIMEOUT,
    message: `${tool.name} timed out after ${timeoutMs} ms`,
    // Safe to try again only if a half-finished call does no harm.
    retryable: tool.idempotent,
    location: request.stepId,
  });
  try {
    const returned: unknown = tool.execute(validated.value, toolContext);
    // A synchronous tool has finished already: nothing to race, nothing to interrupt.
    const raced = !isThenable(returned)
      ? { kind: 'done' as const, value: returned }
      : toolSignal === neverAborted
        ? { kind: 'done' as const, value: await returned }
        : await raceAbort(Promise.resolve(returned), toolSignal);
    if (raced.kind === 'done') {
      output = raced.value;
      status = 'succeeded';
      if (tool.output) {
        let checked = compileSchema(tool.output).validate(output);
        if (checked instanceof Promise) checked = await checked;
        if (!checked.ok) {
          status = 'failed';
          error = {
            code: ErrorCodes.TOOL_OUTPUT_INVALID,
            message: `${tool.name} returned invalid output: ${formatIssues(checked.issues)}`,
            retryable: false,
            location: `${request.stepId}/output${checked.issues[0]?.path ?? ''}`,
          };
        }
      }
    } else if (signal.aborted) {
      status = 'cancelled';
      error = cancelledError(request.stepId, signal.reason);
    } else {
      status = 'failed';
      error = timedOut();
    }
  } catch (thrown) {
    if (signal.aborted) {
      status = 'cancelled';
      error = cancelledError(request.stepId, signal.reason);
    } else if (guard?.signal.aborted) {
      status = 'failed';
      error = timedOut();
    } else {
      status = 'failed';
      error = toStepError(thrown);
    }
  } finally {
    guard?.dispose();
  }

  const durationMs = performance.now() - started;
  const input: Writable<Omit<ToolResultEvent, 'runId' | 'seq' | 'at'>> = {
    type: 'tool-result',
    stepId: request.stepId,
    executionId: request.executionId,
    tool: tool.name,
    status: status === 'cancelled' ? 'cancelled' : status === 'succeeded' ? 'succeeded' : 'failed',
    startedAt,
    durationMs,
  };
  if (status === 'succeeded') input.output = output;
  if (error) input.error = error;
  if (artifacts.length > 0) input.artifacts = artifacts;
  // Hand back what was journaled: redacted, so no secret reaches a model or a later step.
  const journaled = journal.emit(input) as ToolResultEvent;
  const outcome: Writable<ToolCallOutcome> = {
    status,
    output: journaled.output,
    artifacts: journaled.artifacts ?? [],
    executionId: request.executionId,
    durationMs,
    called: true,
  };
  if (journaled.error) outcome.error = journaled.error;
  return outcome;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** A signal that never aborts, shared by calls that have no run signal. */
const neverAborted = new AbortController().signal;

/**
 * Settles when the tool settles or `signal` aborts, whichever is first: a tool may ignore its
 * signal, the kernel does not wait for it. The listener is removed either way.
 */
async function raceAbort<T>(
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

/** A child signal that aborts on the parent's abort or after `timeoutMs`. */
function watchTimeout(parent: AbortSignal, timeoutMs: number, toolName: string) {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () => controller.abort(new StepwiseError(ErrorCodes.STEP_TIMEOUT, `${toolName} timed out after ${timeoutMs} ms`)),
    timeoutMs,
  );
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}

function cancelledError(stepId: string, reason: unknown): StepError {
  const message = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'run cancelled';
  return {
    code: ErrorCodes.STEP_CANCELLED,
    message: `cancelled: ${message}`,
    retryable: false,
    location: stepId,
  };
}

async function decideApproval(
  request: ToolCallRequest,
  context: KernelContext,
  toolName: string,
  effect: Effect,
  approval: { mode: 'prompt' | 'deny' | 'pause'; reason: 'step' | 'policy' },
  args: unknown,
  signal: AbortSignal,
): Promise<{ decision: 'approved' | 'denied' | 'skipped' | 'waiting'; reason?: string }> {
  const { journal } = context;
  const base = {
    stepId: request.stepId,
    executionId: request.executionId,
    tool: toolName,
  };
  if (approval.mode === 'deny') {
    const reason = `the approval policy denies ${effect} tools`;
    await journal.record({
      type: 'approval-decision',
      ...base,
      decision: 'denied',
      source: 'policy',
      reason,
    });
    return { decision: 'denied', reason };
  }
  const requestEvent = journal.emit({
    type: 'approval-request',
    ...base,
    effect,
    args: args as Record<string, unknown>,
    reason: approval.reason,
  });
  await journal.flush();
  const handler = context.approvals?.handler;
  // A person's journaled answer applies whatever the mode (the resuming process may have a handler or none).
  if (
    context.answers?.has(request.stepId) ||
    approval.mode === 'pause' ||
    (!handler && context.approvals?.policy?.nonInteractive === 'pause')
  ) {
    return answerOrWait(journal, context.answers, base);
  }
  if (!handler) {
    const fallback = context.approvals?.policy?.nonInteractive ?? 'deny';
    const reason = fallback === 'auto' ? 'non-interactive: approved by policy' : 'non-interactive: no one to ask';
    const decision = fallback === 'auto' ? 'approved' : 'denied';
    await journal.record({
      type: 'approval-decision',
      ...base,
      decision,
      source: 'fallback',
      reason,
    });
    return { decision, reason };
  }
  let answer: Awaited<ReturnType<typeof handler>>;
  try {
    answer = await handler({
      runId: context.runId,
      stepId: request.stepId,
      executionId: request.executionId,
      tool: toolName,
      effect,
      args: requestEvent.type === 'approval-request' ? requestEvent.args : {},
      description: request.description,
      reason: approval.reason,
      signal,
    });
  } catch (error) {
    answer = {
      decision: 'deny',
      reason: `approval handler failed: ${error instanceof Error ? error.message : error}`,
    };
  }
  const normalized = typeof answer === 'boolean' ? { decision: answer ? 'approve' : 'deny' } : answer;
  const decision =
    normalized.decision === 'approve' ? 'approved' : normalized.decision === 'skip' ? 'skipped' : 'denied';
  const by = 'by' in normalized ? normalized.by : undefined;
  const reason = 'reason' in normalized ? normalized.reason : undefined;
  await journal.record({
    type: 'approval-decision',
    ...base,
    decision,
    source: 'handler',
    ...(by === undefined ? {} : { by }),
    ...(reason === undefined ? {} : { reason }),
  });
  return { decision, ...(reason === undefined ? {} : { reason }) };
}

/**
 * Runs one attempt of one step: `step-start` → references → `callTool` → `step-end`.
 * Every engine calls this for every tool step; they differ only in which steps run when.
 */
export async function invokeStep(step: Step, invocation: StepInvocation, context: KernelContext): Promise<StepResult> {
  const started = performance.now();
  const startedAt = isoNow();
  const executionId = deriveExecutionId(context.runId, step.id, invocation.attempt);
  context.journal.emit({
    type: 'step-start',
    stepId: step.id,
    tool: step.tool,
    attempt: invocation.attempt,
    executionId,
  });

  let outcome: ToolCallOutcome;
  let args = invocation.args ?? step.args ?? {};
  try {
    if (invocation.references === 'resolve') args = resolveReferences(args, invocation.outputs ?? new Map());
    outcome = await callTool(
      {
        stepId: step.id,
        tool: step.tool,
        args,
        attempt: invocation.attempt,
        executionId,
        preconditions: step.preconditions,
        requiresApproval: step.requiresApproval,
        timeoutMs: step.timeoutMs,
        description: step.description,
      },
      context,
    );
  } catch (error) {
    // Reference errors, and a store that refuses the journal, end up here.
    outcome = {
      status: 'failed',
      error: toStepError(error),
      artifacts: [],
      executionId,
      durationMs: performance.now() - started,
      called: false,
    };
    if (StepwiseError.isInstance(error) && error.code.startsWith('E5')) throw error;
  }
  return endStep(step, invocation.attempt, executionId, startedAt, started, outcome, context);
}

/** Journals `step-end` for an outcome and makes it durable. */
export async function endStep(
  step: Step,
  attempt: number,
  executionId: string,
  startedAt: string,
  started: number,
  outcome: Pick<ToolCallOutcome, 'status' | 'output' | 'error' | 'artifacts'> & {
    usage?: StepResult['usage'];
  },
  context: Pick<KernelContext, 'journal'>,
): Promise<StepResult> {
  // Optional keys are assigned, not spread from conditional literals: this runs once per step,
  // and a spread allocates a throw-away object per key.
  const result: Writable<StepResult> = {
    stepId: step.id,
    tool: step.tool,
    status: outcome.status,
    executionId,
    attempt,
    startedAt,
    durationMs: performance.now() - started,
  };
  if (outcome.status === 'succeeded') result.output = outcome.output;
  if (outcome.error) result.error = outcome.error;
  if (outcome.artifacts.length > 0) result.artifacts = outcome.artifacts;
  if (outcome.usage) result.usage = outcome.usage;
  const event = context.journal.emit({
    type: 'step-end',
    stepId: step.id,
    result,
  });
  await context.journal.flush();
  return event.type === 'step-end' ? event.result : result;
}
