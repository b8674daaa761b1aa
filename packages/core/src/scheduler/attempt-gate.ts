import type { StepError } from '../errors.js';
import type { StepResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import { backoffDelay, DEFAULT_RETRY, isRetryable, sleep } from '../plan/backoff.js';
import type { RetryPolicy } from '../plan/plan-schema.js';
import { findReferences } from '../plan/references.js';
import type { EnginePolicy } from './engine-policy.js';
import { nextTurn, TURN_EVERY_MS } from './event-loop-turn.js';
import { readBackOutput } from './output-retention.js';
import type { RunLoop } from './run-loop.js';
import type { SessionControl } from './session-control.js';
import type { Slot, StepBoard } from './step-board.js';
import type { StepObserver } from './step-observer.js';
import { dependencyError, describeOutcome } from './step-outcome.js';

/** The engine's retry settings under the step's own (`undefined` when the engine never retries). */
export function retrySettings(
  policy: Pick<EnginePolicy, 'retry'>,
  step: { readonly retry?: Partial<RetryPolicy> | undefined },
): Partial<RetryPolicy> | undefined {
  if (policy.retry === false) return undefined;
  return { ...policy.retry, ...step.retry };
}

/** What the gate needs: the session's board, journal and state, the host's hold, and the loop to queue on. */
export interface AttemptGateParts {
  readonly board: StepBoard;
  readonly journal: RunJournal;
  readonly control: SessionControl;
  readonly observer: StepObserver;
  readonly policy: Pick<EnginePolicy, 'references' | 'retry' | 'random'>;
  /** `advance` ends a step the gate skipped (E310); `enqueue` queues a retry once its backoff is over. */
  readonly loop: Pick<RunLoop, 'advance' | 'enqueue'>;
  /** A monotonic clock in milliseconds (default `performance.now`), for the event loop's turn. */
  readonly now?: () => number;
}

/**
 * When an attempt may start. `admit` lets a queued attempt start once the event loop has had its
 * turn, the host's hold is over, the outputs it reads are in memory, and (under `step` durability)
 * its dependencies' ends are durable; a step whose references point at a step that ended without
 * output is skipped instead (E310). `retryLater` queues the next attempt after a retryable failure,
 * once its backoff is over.
 */
export class AttemptGate {
  readonly #parts: AttemptGateParts;
  readonly #now: () => number;
  /** `step` durability: a step waits for its dependencies' ends to be durable (see `#dependenciesDurable`). */
  readonly #gated: boolean;
  /** When the run last gave the event loop a turn (see `#turnDue`); unset until its first step. */
  #turnAt: number | undefined;

  constructor(parts: AttemptGateParts) {
    this.#parts = parts;
    this.#now = parts.now ?? (() => performance.now());
    this.#gated = parts.journal.gateDependents();
  }

  /**
   * Whether the attempt may start: a boolean when nothing had to be waited for (a free-running
   * step costs no await), else a promise of it. False when the run stopped or was held, the step
   * was replaced, or it was skipped for a missing reference.
   */
  admit(slot: Slot): boolean | Promise<boolean> {
    if (this.#parts.control.stopped) return false;
    if (this.#turnDue()) return this.#admitAfterTurn(slot);
    return this.#admitHeld(slot);
  }

  async #admitAfterTurn(slot: Slot): Promise<boolean> {
    await nextTurn();
    this.#turnAt = this.#now();
    return this.#mayStillStart(slot) && this.#admitHeld(slot);
  }

  /** Only a held gate costs an await; a free-running host answers synchronously. */
  #admitHeld(slot: Slot): boolean | Promise<boolean> {
    const held = this.#parts.observer.beforeStep(slot);
    return held ? this.#admitAfterHold(slot, held) : this.#admitReads(slot);
  }

  async #admitAfterHold(slot: Slot, held: Promise<void>): Promise<boolean> {
    await held;
    return this.#mayStillStart(slot) && this.#admitReads(slot);
  }

  #admitReads(slot: Slot): boolean | Promise<boolean> {
    if (this.#skipForMissingReference(slot)) return false;
    if (this.#parts.board.retention.mode === 'referenced') return this.#admitAfterReadBack(slot);
    return !this.#gated || this.#dependenciesDurable(slot);
  }

  async #admitAfterReadBack(slot: Slot): Promise<boolean> {
    await this.#readBack(slot);
    return !this.#gated || this.#dependenciesDurable(slot);
  }

  /**
   * After a step waited to start (a held gate, a turn of the event loop, its dependencies' commit):
   * a stop, an unapproved revision that held the run, or a revision that replaced the step
   * meanwhile keeps it from starting (a replacement is queued on its own).
   */
  #mayStillStart(slot: Slot): boolean {
    const { control } = this.#parts;
    return !(control.stopped || control.held || slot.removed);
  }

  /**
   * Whether the run has kept the thread for `TURN_EVERY_MS` and owes the event loop a turn before
   * the next step. Never before its first step, so a host's call right after `run()` still finds
   * the first step started. Synchronous: a step with no turn due costs no await.
   */
  #turnDue(): boolean {
    const now = this.#now();
    if (this.#turnAt === undefined) this.#turnAt = now;
    return now - this.#turnAt >= TURN_EVERY_MS;
  }

  /**
   * Under `step` durability a step starts only once its dependencies' ends are durable (an
   * idempotent step's end commits with the next group commit, not before its slot frees).
   * False when the journal failed: the run fails.
   */
  #dependenciesDurable(slot: Slot): boolean | Promise<boolean> {
    const { board, journal } = this.#parts;
    let needed = 0;
    for (const at of board.graph.dependencies[slot.index] ?? []) {
      const endSeq = board.slots[at]?.endSeq ?? 0;
      if (endSeq > needed) needed = endSeq;
    }
    // Synchronous when nothing is left to commit (a chain's step after its dependency's commit): no promise.
    return needed <= journal.durableSeq || this.#durableThrough(slot, needed);
  }

  async #durableThrough(slot: Slot, needed: number): Promise<boolean> {
    const { journal, control } = this.#parts;
    try {
      await journal.flushThrough(needed);
      return this.#mayStillStart(slot);
    } catch (error) {
      control.journalFailed(error);
      return false;
    }
  }

  /**
   * Reads back from the store the released outputs the step is about to read (a revision or a
   * recovery hook's args added a reference after the output was released).
   */
  async #readBack(slot: Slot): Promise<void> {
    const { board, journal } = this.#parts;
    const reads = slot.args
      ? findReferences(slot.args).map((reference) => reference.stepId)
      : [...(board.graph.references[slot.index] ?? [])];
    if (slot.step.tool === undefined)
      for (const at of board.graph.dependencies[slot.index] ?? []) reads.push(board.graph.ids[at] as string);
    const missing = board.retention.missing(reads, (stepId) => board.byId(stepId)?.result);
    if (missing.length === 0) return;
    // Under batched durability the step's end may not be committed yet.
    await journal.flush();
    for (const stepId of missing) {
      const result = board.byId(stepId)?.result as StepResult;
      board.outputs.set(stepId, await readBackOutput(journal.store, journal.runId, result));
    }
  }

  /** A step whose args reference a step that ended without output is skipped (E310) without running. */
  #skipForMissingReference(slot: Slot): boolean {
    const { board, journal, control, policy, loop } = this.#parts;
    if (policy.references === 'literal') return false;
    const references = slot.args
      ? findReferences(slot.args).map((reference) => reference.stepId)
      : (board.graph.references[slot.index] ?? []);
    const blocker = board.referencedWithoutOutput(references);
    if (!blocker) return false;
    const result = board.emitEnd(
      slot,
      'skipped',
      dependencyError(
        slot.step.id,
        `step "${slot.step.id}" references the output of "${blocker.step.id}", which ${describeOutcome(blocker.result as StepResult)}`,
        { dependency: blocker.step.id, reference: true },
      ),
    );
    control.track(journal.flush());
    loop.advance(slot, result);
    return true;
  }

  /** A retryable error with attempts left: journal `step-retry`, wait the backoff, enqueue again. False: no retry. */
  async retryLater(slot: Slot, failed: StepResult, error: StepError): Promise<boolean> {
    const { policy, journal, control, loop } = this.#parts;
    if (policy.retry === false || !isRetryable(error, retrySettings(policy, slot.step))) return false;
    const settings = { ...DEFAULT_RETRY, ...policy.retry, ...slot.step.retry };
    if (failed.attempt >= settings.maxAttempts) return false;
    const delayMs = backoffDelay(settings, failed.attempt, policy.random);
    slot.status = 'retrying';
    await journal.record({
      type: 'step-retry',
      stepId: slot.step.id,
      attempt: failed.attempt,
      nextAttempt: failed.attempt + 1,
      delayMs,
      error,
    });
    try {
      await sleep(delayMs, control.signal);
    } catch {
      // Stopped while waiting: the end of the session records the step as cancelled.
    }
    if (!control.stopped) loop.enqueue(slot, failed.attempt + 1);
    return true;
  }
}
