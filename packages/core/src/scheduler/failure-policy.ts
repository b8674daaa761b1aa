import { type StepError, toStepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import { DEFAULT_RETRY, isRetryable } from '../plan/backoff.js';
import { type AdjustOutcome, type AdjustScope, adjustAfterStep } from './adjust-run.js';
import { type AttemptGate, retrySettings } from './attempt-gate.js';
import type { EnginePolicy, RecoveryDecision } from './engine-policy.js';
import { insertSteps } from './insert-steps.js';
import { normalizeDecision } from './policies/recovery-decision.js';
import type { RunRevisions } from './revise-run.js';
import type { RunLoop } from './run-loop.js';
import type { SessionControl } from './session-control.js';
import type { Slot, StepBoard } from './step-board.js';
import type { Warn } from './step-observer.js';
import { isWaiting } from './step-outcome.js';

/** A hook may keep asking for retries; past this many attempts the failure policy decides (the schema's own cap). */
const MAX_ATTEMPTS = 100;

/** Whether this result, once final, ends the run under the policy. */
export function stopsRun(policy: Pick<EnginePolicy, 'stopOn' | 'critical'>, slot: Slot, result: StepResult): boolean {
  if (policy.stopOn === 'any') return result.status !== 'succeeded';
  return result.status === 'failed' && (slot.step.critical ?? policy.critical ?? true);
}

/** What the failure policy needs: the policy, the session's board, journal and state, and the parts it hands work to. */
export interface FailurePolicyParts {
  readonly policy: EnginePolicy;
  readonly board: Pick<StepBoard, 'outputs'>;
  readonly journal: RunJournal;
  readonly control: SessionControl;
  readonly gate: Pick<AttemptGate, 'retryLater'>;
  readonly loop: Pick<RunLoop, 'enqueue' | 'advance'>;
  /** Revises the plan for the recovery hook's `insert`. */
  readonly revisions: Pick<RunRevisions, 'reviseByDecision'>;
  /** Present when the policy has an adjust hook. */
  readonly adjust: AdjustScope | undefined;
  readonly warn: Warn;
}

/**
 * What a failure does: retry with backoff (`AttemptGate.retryLater`), then the recovery hook and
 * its decision (retry, skip, insert, abort), then the policy's stop rule (`conclude`).
 */
export class FailurePolicy {
  readonly #parts: FailurePolicyParts;

  constructor(parts: FailurePolicyParts) {
    this.#parts = parts;
  }

  /** The result stands as it is: no retry backoff and no recovery hook will be waited for. */
  isFinal(slot: Slot, result: StepResult): boolean {
    const { policy } = this.#parts;
    if (result.status !== 'failed' || policy.stopOn === 'any') return true;
    if (policy.onStepFailed) return false;
    if (policy.retry === false || !isRetryable(result.error, retrySettings(policy, slot.step))) return true;
    const maxAttempts = slot.step.retry?.maxAttempts ?? policy.retry.maxAttempts ?? DEFAULT_RETRY.maxAttempts;
    return result.attempt >= maxAttempts;
  }

  /** After an attempt ended unsuccessfully, outside the concurrency slot: retry with backoff, the recovery hook, then conclude. */
  async recover(slot: Slot, result: StepResult): Promise<void> {
    const { control, gate } = this.#parts;
    if (control.stopped || result.status !== 'failed') {
      await this.conclude(slot, result, `step "${slot.step.id}" ${result.status}`);
      return;
    }
    const error: StepError = result.error ?? toStepError(new Error('the step failed'));
    if (await gate.retryLater(slot, result, error)) return;
    const decision = await this.#askHook(slot, result, error);
    if (control.stopped) {
      this.#parts.loop.advance(slot, result);
      return;
    }
    if (decision) return this.#apply(slot, result, decision);
    await this.concludeFailure(slot, result);
  }

  /** A failure that stands (no retry, no recovery decision): `conclude` with the stop rule's reason. */
  concludeFailure(slot: Slot, result: StepResult): Promise<void> {
    return this.conclude(slot, result, this.#failedReason(slot));
  }

  /**
   * A failure that stands, the adjust hook already asked (a resume asks about every step a crash
   * left unadjusted before it advances any): the stop rule unless its revision applied, then advance.
   */
  concludeAdjusted(slot: Slot, result: StepResult, outcome: AdjustOutcome): void {
    this.#settle(slot, result, outcome === 'revised', this.#failedReason(slot));
  }

  /**
   * A final result: a stop comes first, so a stopping run journals nothing for the step's dependents.
   * A failure goes to the adjust hook first: when it revises the plan, the failure no longer stops the run.
   */
  async conclude(slot: Slot, result: StepResult, reason: string): Promise<void> {
    const { adjust, control } = this.#parts;
    const asks = adjust !== undefined && !control.stopped && result.status === 'failed';
    const revised = asks && (await adjustAfterStep(adjust, slot, result)) === 'revised';
    this.#settle(slot, result, revised, reason);
  }

  #settle(slot: Slot, result: StepResult, revised: boolean, reason: string): void {
    const { control, loop, policy } = this.#parts;
    if (!revised && !control.stopped && stopsRun(policy, slot, result))
      control.stop(isWaiting(result) ? 'waiting' : 'failed', reason);
    loop.advance(slot, result);
  }

  #failedReason(slot: Slot): string {
    const what = this.#parts.policy.stopOn === 'any' ? 'step' : 'critical step';
    return `${what} "${slot.step.id}" failed`;
  }

  /** The hook (or a person continuing the run) chose `skip`: the step ends `skipped`, keeping its error; its dependents may run. */
  async skip(
    slot: Slot,
    failed: StepResult,
    reason: string | undefined,
    by: 'hook' | 'person' = 'hook',
  ): Promise<void> {
    const { journal, loop } = this.#parts;
    const error = failed.error ?? toStepError(new Error('the step failed'));
    const who = by === 'hook' ? 'the recovery hook' : 'a person';
    const event = journal.emit({
      type: 'step-end',
      stepId: slot.step.id,
      result: {
        ...failed,
        status: 'skipped',
        error: {
          ...error,
          message: `skipped by ${who}${reason ? ` (${reason})` : ''}: ${error.message}`,
          details: { ...error.details, recovery: 'skip', ...(by === 'person' ? { skippedBy: 'person' } : {}) },
        },
      },
    });
    await journal.flush();
    loop.advance(slot, (event as { result: StepResult }).result);
  }

  async #askHook(slot: Slot, result: StepResult, error: StepError): Promise<RecoveryDecision | undefined> {
    const { policy, journal, board, control, warn } = this.#parts;
    const hook = policy.onStepFailed;
    if (!hook || result.attempt >= MAX_ATTEMPTS) return undefined;
    slot.status = 'recovering';
    try {
      return normalizeDecision(
        await hook(slot.step, error, {
          runId: journal.runId,
          attempt: result.attempt,
          recoveries: slot.recoveries,
          args: slot.args ?? slot.step.args ?? {},
          outputs: board.outputs,
          signal: control.signal,
        }),
      );
    } catch (thrown) {
      // A broken hook must not break the run: the default policy applies.
      warn(`recovery hook failed for step "${slot.step.id}"`, thrown);
      return undefined;
    }
  }

  /** Journals the recovery hook's decision and carries it out. */
  async #apply(slot: Slot, result: StepResult, decision: RecoveryDecision): Promise<void> {
    const { journal, loop, control } = this.#parts;
    if (decision.action === 'insert') return this.#insert(slot, result, decision);
    await journal.record({
      type: 'recovery-decision',
      stepId: slot.step.id,
      attempt: result.attempt,
      decision: decision.action,
      ...(decision.action === 'retry' && decision.args ? { args: decision.args } : {}),
      ...(decision.reason ? { reason: decision.reason } : {}),
    });
    if (decision.action === 'retry') {
      slot.recoveries++;
      if (decision.args) slot.args = decision.args;
      loop.enqueue(slot, result.attempt + 1);
    } else if (decision.action === 'skip') {
      await this.skip(slot, result, decision.reason);
    } else {
      control.stop('failed', `the recovery hook aborted the run at step "${slot.step.id}"`);
      loop.advance(slot, result);
    }
  }

  /** `insert`: the steps go in before the failed one; then it is retried once they succeeded, or skipped. */
  async #insert(
    slot: Slot,
    result: StepResult,
    decision: Extract<RecoveryDecision, { action: 'insert' }>,
  ): Promise<void> {
    const applied = await insertSteps(this.#parts.revisions, slot, result, decision);
    if (!applied || this.#parts.control.stopped) {
      await this.conclude(slot, result, `step "${slot.step.id}" failed`);
    } else if (decision.afterwards === 'skip') {
      await this.skip(slot, result, decision.reason);
    } else {
      slot.recoveries++;
      if (slot.remaining === 0) this.#parts.loop.enqueue(slot, result.attempt + 1);
      else slot.status = 'blocked';
    }
  }
}
