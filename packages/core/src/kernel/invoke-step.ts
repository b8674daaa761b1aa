import { isStoreError, type StepError, StepwiseError, toStepError } from '../errors.js';
import type { StepResult, ToolCallEvent, ToolResultEvent } from '../journal/events.js';
import { isoNow, type RunJournal } from '../journal/journal.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import type { Precondition, Step } from '../plan/plan-schema.js';
import { resolveReferences } from '../plan/references.js';
import type { Artifact, ToolLogger } from '../tools/define-tool.js';
import type { AnyTool, ToolRegistry } from '../tools/tool-registry.js';
import type { ApprovalOptions } from './approval.js';
import { admitCall, refusedOutcome } from './call-admission.js';
import type { JournaledAnswers } from './pause-approval.js';
import { acquireClaim, type ClaimingTool, releaseClaim } from './tool-claim.js';
import { cancelledError, type Execution, executeTool, neverAborted } from './tool-execution.js';

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
  readonly args?: Record<string, unknown> | undefined;
  /** The plan's revision this attempt runs under (default 0); part of `ctx.idempotencyKey`. */
  readonly revision?: number;
}

/** The outcome of one tool call, before it becomes a StepResult (agentic steps make many). */
export interface ToolCallOutcome {
  readonly status: 'succeeded' | 'failed' | 'denied' | 'skipped' | 'cancelled' | 'waiting';
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
  /** Agentic: the model's own id for this call, journaled with the `tool-call`. */
  readonly toolCallId?: string;
  /**
   * The plan's revision, for a call that carries out a plan step: `ctx.idempotencyKey` is then derived
   * from the run, the step and it. Without it the key is the `executionId`.
   */
  readonly revision?: number;
}

/** Optional keys of hot-path objects are assigned after the literal: no conditional spreads. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Calls one tool: whitelist → argument validation → preconditions → approval → what the tool must
 * wait for (`acquire`: a cluster-wide slot) → the lease, checked again → journal `tool-call` →
 * execute with timeout and signal → output validation → journal `tool-result`.
 * The only place a tool's `execute` is ever called. Never throws for tool problems.
 *
 * Every wait comes before the `tool-call`, and the run's lease is checked after them: a run that
 * stopped or lost its lease meanwhile (its signal aborts then) journals no call and starts no tool.
 * A non-idempotent tool runs only once its `tool-call` is durable, so a crash leaves evidence and
 * resume fails the step as interrupted. An idempotent tool (every `read` tool by default) may run
 * again after a crash, so it starts at once and its call is committed as soon as the ready promise
 * chains have run: a quick tool's call, result and step end share one commit.
 */
export function callTool(request: ToolCallRequest, context: KernelContext): Promise<ToolCallOutcome> {
  try {
    const outcome = callToolNow(request, context);
    return outcome instanceof Promise ? outcome : Promise.resolve(outcome);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `callTool` for the kernel's own steps: the outcome itself when nothing had to be waited for
 * (a call admitted synchronously, an idempotent tool that returned a value), else a promise. Each
 * async layer a quick step went through cost a promise and a turn of the microtask queue.
 */
function callToolNow(request: ToolCallRequest, context: KernelContext): ToolCallOutcome | Promise<ToolCallOutcome> {
  const started = performance.now();
  const signal = context.signal ?? neverAborted;
  const admitting = admitCall(request, context, signal, started);
  if (admitting instanceof Promise)
    return admitting.then((admission) => admitted(admission, request, context, signal, started));
  return admitted(admitting, request, context, signal, started);
}

function admitted(
  admission: Awaited<ReturnType<typeof admitCall>>,
  request: ToolCallRequest,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
): ToolCallOutcome | Promise<ToolCallOutcome> {
  if (!admission.admitted) return admission.outcome;
  const { tool, args } = admission;
  if (tool.acquire === undefined) return startCall(request, tool, args, context, signal, started);
  return claimThenStart(request, tool as ClaimingTool, args, context, signal, started);
}

/** A tool that must wait for a cluster-wide slot (`acquire`) first. */
async function claimThenStart(
  request: ToolCallRequest,
  tool: ClaimingTool,
  args: Record<string, unknown>,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
): Promise<ToolCallOutcome> {
  // Listeners (and a reader of the store) learn the step started while it waits for its claim.
  context.journal.commitSoon();
  const claimed = await acquireClaim(request, tool, context, signal, started);
  if ('refused' in claimed) return claimed.refused;
  try {
    return await startCall(request, tool, args, context, signal, started);
  } finally {
    await releaseClaim(claimed.claim);
  }
}

/** From the admitted (and claimed) call to its journaled result; refused if the run stopped or lost its lease meanwhile. */
function startCall(
  request: ToolCallRequest,
  tool: AnyTool,
  args: Record<string, unknown>,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
): ToolCallOutcome | Promise<ToolCallOutcome> {
  // Asked first: a lease whose time ran out is declared lost here, which aborts the run's signal.
  const fenced = context.journal.fencedBy();
  if (fenced !== undefined || signal.aborted) {
    const reason = signal.aborted ? signal.reason : fenced;
    const error = context.journal.redactor.redact(cancelledError(request.stepId, reason));
    return refusedOutcome(request, 'cancelled', error, started);
  }

  const startedAt = isoNow();
  journalCall(request, tool, args, context.journal);
  // Durable before a non-idempotent tool runs: a crash from here on leaves evidence for resume.
  let execution: Execution | Promise<Execution>;
  if (tool.idempotent) {
    // An idempotent call commits soon after, with its result when the tool is quick.
    context.journal.commitSoon();
    execution = executeTool(request, tool, args, context, signal);
  } else {
    execution = context.journal.flush().then(() => executeTool(request, tool, args, context, signal));
  }
  if (!(execution instanceof Promise))
    return journalResult(request, tool, execution, startedAt, started, context.journal);
  return execution.then((done) => journalResult(request, tool, done, startedAt, started, context.journal));
}

function journalCall(request: ToolCallRequest, tool: AnyTool, args: Record<string, unknown>, journal: RunJournal) {
  const call: Writable<Omit<ToolCallEvent, 'runId' | 'seq' | 'at'>> = {
    type: 'tool-call',
    stepId: request.stepId,
    executionId: request.executionId,
    attempt: request.attempt,
    tool: tool.name,
    effect: tool.effect,
    idempotent: tool.idempotent,
    args,
  };
  if (request.turn !== undefined) call.turn = request.turn;
  if (request.toolCallId !== undefined) call.toolCallId = request.toolCallId;
  journal.emit(call);
}

/** Journals `tool-result` and hands back what was journaled: redacted, so no secret reaches a model or a later step. */
function journalResult(
  request: ToolCallRequest,
  tool: AnyTool,
  execution: Execution,
  startedAt: string,
  started: number,
  journal: RunJournal,
): ToolCallOutcome {
  const durationMs = performance.now() - started;
  const { status, error, artifacts } = execution;
  const input: Writable<Omit<ToolResultEvent, 'runId' | 'seq' | 'at'>> = {
    type: 'tool-result',
    stepId: request.stepId,
    executionId: request.executionId,
    tool: tool.name,
    status: status === 'cancelled' ? 'cancelled' : status === 'succeeded' ? 'succeeded' : 'failed',
    startedAt,
    durationMs,
  };
  if (status === 'succeeded') input.output = execution.output;
  if (error) input.error = error;
  if (artifacts.length > 0) input.artifacts = artifacts;
  const journaled = emitResult(journal, input);
  const outcome: Writable<ToolCallOutcome> = {
    // `failed` when the result the tool gave could not be journaled (see `emitResult`).
    status: journaled.status === input.status ? status : 'failed',
    output: journaled.output,
    artifacts: journaled.artifacts ?? [],
    executionId: request.executionId,
    durationMs,
    called: true,
  };
  if (journaled.error) outcome.error = journaled.error;
  return outcome;
}

/**
 * Journals a `tool-result`. One the redactor refuses (E004: an error's details nested too deep to
 * walk) is journaled as a failed call with that error instead: nothing unredacted is kept, and the
 * call still ends in the journal.
 */
function emitResult(journal: RunJournal, input: Writable<Omit<ToolResultEvent, 'runId' | 'seq' | 'at'>>) {
  try {
    return journal.emit(input) as ToolResultEvent;
  } catch (error) {
    if (!StepwiseError.isInstance(error)) throw error;
    const { output: _output, artifacts: _artifacts, ...rest } = input;
    return journal.emit({ ...rest, status: 'failed', error: toStepError(error) }) as ToolResultEvent;
  }
}

/**
 * Runs one attempt of one step: `step-start` → references → `callTool` → `step-end`.
 * Every engine calls this for every tool step; they differ only in which steps run when.
 */
export function invokeStep(step: Step, invocation: StepInvocation, context: KernelContext): Promise<StepResult> {
  const started = performance.now();
  const { attempt } = invocation;
  try {
    const startedAt = isoNow();
    const executionId = deriveExecutionId(context.runId, step.id, attempt);
    context.journal.emit({ type: 'step-start', stepId: step.id, tool: step.tool, attempt, executionId });
    let calling: ToolCallOutcome | Promise<ToolCallOutcome>;
    try {
      let args = invocation.args ?? step.args ?? {};
      if (invocation.references === 'resolve') args = resolveReferences(args, invocation.outputs ?? new Map());
      calling = callToolNow(
        {
          stepId: step.id,
          tool: step.tool,
          args,
          attempt,
          executionId,
          preconditions: step.preconditions,
          requiresApproval: step.requiresApproval,
          timeoutMs: step.timeoutMs,
          description: step.description,
          revision: invocation.revision ?? 0,
        },
        context,
      );
    } catch (error) {
      // Reference errors, and a store that refuses the journal, end up here (and in the rejection below).
      calling = failedCall(error, executionId, started);
    }
    // Closures only where a promise needs them: a quick step allocates none.
    if (calling instanceof Promise) {
      return calling.then(
        (outcome) => stepEnded(step, attempt, executionId, startedAt, started, outcome, context),
        (error: unknown) =>
          stepEnded(step, attempt, executionId, startedAt, started, failedCall(error, executionId, started), context),
      );
    }
    return stepEnded(step, attempt, executionId, startedAt, started, calling, context);
  } catch (error) {
    return Promise.reject(error);
  }
}

function stepEnded(
  step: Step,
  attempt: number,
  executionId: string,
  startedAt: string,
  started: number,
  outcome: ToolCallOutcome,
  context: KernelContext,
): Promise<StepResult> {
  // Only a succeeded call of an idempotent tool may end without its own commit (batched durability).
  const idempotent =
    outcome.status === 'succeeded' && step.tool !== undefined && context.registry.get(step.tool)?.idempotent === true;
  return endStep(step, attempt, executionId, startedAt, started, outcome, context, idempotent);
}

/** A call that threw before its tool ran ends the step failed; a store's error goes on up (nothing more can be journaled). */
function failedCall(error: unknown, executionId: string, started: number): ToolCallOutcome {
  if (isStoreError(error)) throw error;
  return {
    status: 'failed',
    error: toStepError(error),
    artifacts: [],
    executionId,
    durationMs: performance.now() - started,
    called: false,
  };
}

/** Journals `step-end` for an outcome and makes it durable (or, for an idempotent step, as the journal's durability allows). */
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
  idempotent = false,
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
  await context.journal.endOfStep(idempotent);
  return event.type === 'step-end' ? event.result : result;
}
