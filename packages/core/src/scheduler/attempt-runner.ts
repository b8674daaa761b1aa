import type { StepResult } from '../journal/events.js';
import type { FoldedRun } from '../journal/fold-run.js';
import { invokeStep, type KernelContext } from '../kernel/invoke-step.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import { type AdjustScope, adjustThenAdvance } from './adjust-run.js';
import type { AttemptGate } from './attempt-gate.js';
import type { EnginePolicy } from './engine-policy.js';
import type { FailurePolicy } from './failure-policy.js';
import type { Queued, RunLoop } from './run-loop.js';
import type { SessionControl } from './session-control.js';
import type { Slot, StepBoard } from './step-board.js';
import type { StepObserver } from './step-observer.js';

/** What running an attempt needs: the board, the kernel, and the parts before and after the work. */
export interface AttemptRunnerParts {
  readonly board: StepBoard;
  /** The run's kernel context (its signal is the session's). */
  readonly kernel: KernelContext;
  readonly policy: Pick<EnginePolicy, 'references' | 'goalSteps'>;
  readonly control: SessionControl;
  readonly observer: StepObserver;
  readonly gate: Pick<AttemptGate, 'admit'>;
  readonly loop: Pick<RunLoop, 'free' | 'advance'>;
  readonly failures: Pick<FailurePolicy, 'isFinal' | 'recover'>;
  /** Present when the policy has an adjust hook. */
  readonly adjust: AdjustScope | undefined;
  /** The journal as folded at resume, for a goal step whose attempt a crash left in flight. */
  readonly resumed: FoldedRun | undefined;
}

/**
 * Runs one queued attempt in its concurrency slot: the gate admits it, its work runs (the kernel's
 * `invokeStep`, or the policy's goal-step executor), and the result goes on: a success to the
 * adjust hook and the loop, a final failure to the failure policy before the slot frees, any other
 * failure to the failure policy after (its backoff and hook must not hold a slot).
 */
export class AttemptRunner {
  readonly #parts: AttemptRunnerParts;

  constructor(parts: AttemptRunnerParts) {
    this.#parts = parts;
  }

  async run(queued: Queued): Promise<void> {
    const { slot } = queued;
    let failed: StepResult | undefined;
    // A revision replaced or removed the step after it was queued: its entry only frees the slot.
    if (!slot.removed) slot.claimed = true;
    try {
      if (!slot.removed) failed = await this.#attempt(slot, queued.attempt);
    } finally {
      this.#parts.loop.free(queued);
    }
    if (failed) await this.#parts.failures.recover(slot, failed);
  }

  /** One attempt inside the concurrency slot; returns the result when it needs the failure policy. */
  async #attempt(slot: Slot, attempt: number): Promise<StepResult | undefined> {
    const { board, control, gate, loop, failures, adjust } = this.#parts;
    const admitted = gate.admit(slot);
    if (admitted === false || (admitted !== true && !(await admitted))) return undefined;
    slot.status = 'running';
    slot.attempt = attempt;
    board.running++;
    this.#parts.observer.started(slot);
    let result: StepResult;
    try {
      result = await this.#work(slot, attempt);
    } catch (error) {
      // Only a journal the store refuses gets here: nothing more can be recorded.
      control.journalFailed(error);
      return undefined;
    } finally {
      board.running--;
    }
    if (result.status === 'succeeded') {
      // Inside the slot on purpose: dependents are queued before the slot frees, so plan order decides ties.
      const adjusting = adjustThenAdvance(adjust, loop, slot, result);
      if (adjusting) await adjusting;
      return undefined;
    }
    if (failures.isFinal(slot, result)) {
      // Nothing to wait for: the failure policy runs before the slot frees, so no later step
      // slips in ahead of a stop (at concurrency 1, a failed critical step starts nothing after it).
      await failures.recover(slot, result);
      return undefined;
    }
    return result;
  }

  #work(slot: Slot, attempt: number): Promise<StepResult> {
    const { board, kernel, policy } = this.#parts;
    const goalSteps = policy.goalSteps;
    if (slot.step.tool === undefined && goalSteps) {
      const resumed = slot.resumeAttempt ? this.#parts.resumed : undefined;
      slot.resumeAttempt = false;
      // A crash left the attempt running (its step-start stands); after a question it ended
      // `waiting`, so it starts again as the same attempt. The executor journals only its work and its end.
      if (resumed?.steps.get(slot.step.id)?.status !== 'running') {
        kernel.journal.emit({
          type: 'step-start',
          stepId: slot.step.id,
          tool: undefined,
          attempt,
          executionId: deriveExecutionId(kernel.runId, slot.step.id, attempt),
        });
      }
      return goalSteps.execute({
        plan: board.plan,
        step: slot.step,
        index: slot.index,
        attempt,
        kernel,
        outputs: board.outputs,
        ...(resumed ? { resumed } : {}),
      });
    }
    return invokeStep(
      slot.step,
      {
        attempt,
        references: policy.references,
        outputs: board.outputs,
        revision: board.plan.revision ?? 0,
        // Not a conditional spread: this literal is built for every step.
        args: slot.args || undefined,
      },
      kernel,
    );
  }
}
