import { setMaxListeners } from 'node:events';
import { ErrorCodes, messageOf, StepwiseError } from '../errors.js';

/** How a stopped session ends: the run's status. */
export type StopKind = 'cancelled' | 'failed' | 'waiting';

export interface StopCause {
  readonly kind: StopKind;
  readonly reason: string;
}

/**
 * Whether a session may go on, and when it is done; every part of the scheduler reads it.
 * - A **stop** (the first one wins): nothing new starts, in-flight steps are aborted through
 *   `signal`, the run ends with the stop's kind.
 * - A **hold** (an unapproved revision): nothing new starts, in-flight steps finish, the run ends `waiting`.
 * - **Work** the session waits for (queued and running attempts, backoffs, hooks, journal flushes):
 *   once none is left the session is `idle` and finishes.
 */
export class SessionControl {
  readonly #controller = new AbortController();
  #stop: StopCause | undefined;
  #fatal: { readonly error: unknown } | undefined;
  #holding: string | undefined;
  #pending = 0;
  #ended = false;
  #resolveIdle: () => void = () => undefined;
  /** Resolves once no work is left (see `endWork`). */
  readonly idle = new Promise<void>((resolve) => {
    this.#resolveIdle = resolve;
  });
  #resolveBegun: () => void = () => undefined;
  /** Resolves once the session has put every step where it belongs (released, or restored by a resume). */
  readonly begun = new Promise<void>((resolve) => {
    this.#resolveBegun = resolve;
  });

  constructor() {
    // Every in-flight step listens to the run's signal; hundreds at once are expected, not a leak.
    setMaxListeners(0, this.#controller.signal);
  }

  /** Aborts (with an E307 error) when the session stops. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get stopped(): boolean {
    return this.#stop !== undefined;
  }

  /** The first stop's kind and reason. */
  get stopCause(): StopCause | undefined {
    return this.#stop;
  }

  get held(): boolean {
    return this.#holding !== undefined;
  }

  /** The journal failed: the session's result rejects with this error. */
  get fatal(): { readonly error: unknown } | undefined {
    return this.#fatal;
  }

  /** No work was left once: the session is finishing or has finished. */
  get ended(): boolean {
    return this.#ended;
  }

  /** `abortReason` is what `signal` aborts with; default an E307 error carrying `reason`. */
  stop(kind: StopKind, reason: string, abortReason?: StepwiseError): void {
    if (this.#stop) return;
    this.#stop = { kind, reason };
    this.#controller.abort(abortReason ?? new StepwiseError(ErrorCodes.STEP_CANCELLED, reason));
  }

  /**
   * The journal refused a write, or the run's lease was lost: stop everything; the result rejects
   * with this (first) error, and the signal aborts with it when it is a `StepwiseError` (E501 for a
   * lost lease), so a tool can tell a lost run from a cancelled one.
   */
  journalFailed(error: unknown): void {
    this.#fatal ??= { error };
    const message = messageOf(error);
    this.stop('failed', `the journal failed: ${message}`, StepwiseError.isInstance(error) ? error : undefined);
  }

  hold(reason: string): void {
    this.#holding ??= reason;
  }

  markBegun(): void {
    this.#resolveBegun();
  }

  beginWork(): void {
    this.#pending++;
  }

  endWork(): void {
    this.#pending--;
    if (this.#pending !== 0) return;
    this.#ended = true;
    this.#resolveIdle();
  }

  /** Counts `work` until it settles; a rejection is a journal failure (only the journal may reject here). */
  track(work: Promise<void>): void {
    this.#pending++;
    // One reaction, not `catch` then `finally` (four more promises for every step a session runs).
    work.then(
      () => this.endWork(),
      (error: unknown) => {
        try {
          this.journalFailed(error);
        } finally {
          this.endWork();
        }
      },
    );
  }
}
