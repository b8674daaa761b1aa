import { ErrorCodes, messageOf, type StepError } from '../errors.js';
import type { ToolResultEvent } from '../journal/events.js';
import { isoNow } from '../journal/journal.js';
import type { Reconciliation } from '../tools/define-tool.js';
import type { AnyTool } from '../tools/tool-registry.js';
import { deriveIdempotencyKey } from './idempotency-key.js';
import type { KernelContext, ToolCallOutcome } from './invoke-step.js';
import { cancelledError, checkOutput, neverAborted, raceAbort } from './tool-execution.js';

/** A call a crash left in flight (its `tool-call` journaled, no result), to ask its tool about. */
export interface ReconcileRequest {
  readonly stepId: string;
  readonly tool: AnyTool;
  /** The call's args as journaled with its `tool-call`. */
  readonly args: Record<string, unknown>;
  readonly attempt: number;
  readonly executionId: string;
  /** The plan's revision: with the run and the step, what the call's idempotency key was derived from. */
  readonly revision: number;
}

/**
 * What resume does with the call: `done` ends the step with `outcome` (its reconciled `tool-result`
 * is journaled), `not-done` runs the step again, `unknown` fails it with `error` (E309, or E307 when
 * the run stopped while it asked).
 */
export type ReconcileOutcome =
  | { readonly answer: 'done'; readonly outcome: Pick<ToolCallOutcome, 'status' | 'output' | 'error' | 'artifacts'> }
  | { readonly answer: 'not-done' }
  | { readonly answer: 'unknown'; readonly error: StepError };

/**
 * Asks a tool's `reconcile` whether the effect of a call a crash interrupted happened, with the key
 * the call was given. A `done` output is validated like `execute`'s and journaled as a `tool-result`
 * marked `reconciled`; a throw, an answer the run's stop or lost lease cut short, or a tool without
 * `reconcile` is `unknown`. Never throws for tool problems.
 */
export async function reconcileCall(request: ReconcileRequest, context: KernelContext): Promise<ReconcileOutcome> {
  const { tool, stepId } = request;
  const signal = context.signal ?? neverAborted;
  if (tool.reconcile === undefined) return unknown(stepId, 'the tool cannot reconcile');
  const started = performance.now();
  const startedAt = isoNow();
  let answer: Reconciliation;
  try {
    const asked = Promise.resolve(
      tool.reconcile({
        input: request.args,
        signal,
        runId: context.runId,
        stepId,
        executionId: request.executionId,
        idempotencyKey: deriveIdempotencyKey(context.runId, stepId, request.revision),
        attempt: request.attempt,
        log: context.log ?? (() => undefined),
      }),
    );
    const raced = await raceAbort(asked, signal);
    const fenced = context.journal.fencedBy();
    if (raced.kind === 'interrupted' || fenced !== undefined) {
      return { answer: 'unknown', error: cancelledError(stepId, signal.aborted ? signal.reason : fenced) };
    }
    answer = raced.value;
  } catch (error) {
    return unknown(stepId, `its reconcile threw: ${messageOf(error)}`);
  }
  if (answer?.status === 'not-done') return { answer: 'not-done' };
  if (answer?.status !== 'done') {
    const reason = answer?.status === 'unknown' ? answer.reason : undefined;
    return unknown(stepId, `its reconcile answered unknown${reason ? ` (${reason})` : ''}`);
  }
  const checked = await checkOutput({ stepId }, tool, answer.output, []);
  const result: { -readonly [K in keyof ToolResultEvent]?: ToolResultEvent[K] } = {
    type: 'tool-result',
    stepId,
    executionId: request.executionId,
    tool: tool.name,
    status: checked.status === 'succeeded' ? 'succeeded' : 'failed',
    startedAt,
    durationMs: performance.now() - started,
    reconciled: true,
  };
  if (checked.status === 'succeeded') result.output = checked.output;
  if (checked.error) result.error = checked.error;
  const journaled = context.journal.emit(result as Omit<ToolResultEvent, 'runId' | 'seq' | 'at'>) as ToolResultEvent;
  const outcome = { status: journaled.status === 'succeeded' ? 'succeeded' : 'failed', artifacts: [] } as const;
  return {
    answer: 'done',
    outcome: { ...outcome, output: journaled.output, ...(journaled.error ? { error: journaled.error } : {}) },
  };
}

function unknown(stepId: string, why: string): ReconcileOutcome {
  return {
    answer: 'unknown',
    error: {
      code: ErrorCodes.STEP_INTERRUPTED,
      message: `step "${stepId}" was in flight when the run stopped and its tool is not idempotent; ${why}, so it was not run again`,
      retryable: false,
      location: stepId,
    },
  };
}
