import { toStepError } from '../errors.js';
import type { ToolClaim } from '../tools/define-tool.js';
import type { AnyTool } from '../tools/tool-registry.js';
import { refusedOutcome } from './call-admission.js';
import type { KernelContext, ToolCallOutcome, ToolCallRequest } from './invoke-step.js';
import { signalWithTimeout } from './signal-with-timeout.js';
import { cancelledError, neverAborted, raceAbort } from './tool-execution.js';

/** A tool that declares what its calls wait for. */
export type ClaimingTool = AnyTool & { readonly acquire: NonNullable<AnyTool['acquire']> };

/**
 * Waits for what the tool's `acquire` claims (a cluster-wide slot) with the run's signal, before
 * anything of the call is journaled. A wait the run's stop or lost lease ends gives a `cancelled`
 * outcome, a claim that fails a `failed` one: either way the tool never started and no `tool-call`
 * exists, so a resume runs the step again.
 */
export async function acquireClaim(
  request: ToolCallRequest,
  tool: ClaimingTool,
  context: KernelContext,
  signal: AbortSignal,
  started: number,
): Promise<{ readonly claim: ToolClaim } | { readonly refused: ToolCallOutcome }> {
  try {
    const acquiring = Promise.resolve(
      tool.acquire({
        signal,
        runId: context.runId,
        stepId: request.stepId,
        executionId: request.executionId,
        leaseTtlMs: context.journal.lease?.ttlMs,
      }),
    );
    // Raced with the run's signal, as a call is: an `acquire` that ignores its signal cannot keep a
    // stopped run waiting. A claim it still grants later is released at once.
    const raced = await raceAbort(acquiring, signal);
    if (raced.kind === 'done') return { claim: raced.value };
    acquiring.then(releaseClaim, () => undefined);
    throw signal.reason;
  } catch (error) {
    const stopped = signal.aborted ? signal.reason : context.journal.fencedBy();
    const refusal = stopped === undefined ? toStepError(error) : cancelledError(request.stepId, stopped);
    const status = stopped === undefined ? 'failed' : 'cancelled';
    return { refused: refusedOutcome(request, status, context.journal.redactor.redact(refusal), started) };
  }
}

/** How long a step's end waits for its claim's release before it goes on without it. */
export const RELEASE_WAIT_MS = 5_000;

/**
 * Frees a claim once its call settled. A release that fails is left to the claim's own expiry, and
 * one still pending after RELEASE_WAIT_MS is left to finish on its own: the step's outcome does not
 * depend on it, and a release that never settles must not keep the step (and its run) from ending.
 */
export async function releaseClaim(claim: ToolClaim): Promise<void> {
  // The kernel's own bound and race, as for a call: a timer that aborts, raced with the release.
  const bound = signalWithTimeout(neverAborted, RELEASE_WAIT_MS, () => undefined);
  try {
    await raceAbort(Promise.resolve(claim.release()), bound.signal);
  } catch {
    // Nothing to do: a claim that is not freed expires (a slot's time-to-live).
  } finally {
    bound.dispose();
  }
}
