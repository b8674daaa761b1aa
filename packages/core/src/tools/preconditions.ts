import { type CustomErrorCode, type ErrorCode, ErrorCodes, messageOf } from '../errors.js';

/**
 * A check that must hold before the tool is called. `kind` picks a checker from the
 * precondition registry (`file_exists`, `dir_exists`, `project` from tools-node; hosts add more).
 * Plans carry it (the plan schema's `PreconditionSchema` parses exactly this shape).
 */
export interface Precondition {
  readonly kind: string;
  readonly path?: string | undefined;
  readonly description?: string | undefined;
  readonly [field: string]: unknown;
}

export interface PreconditionContext {
  readonly workspace: string | undefined;
  readonly runId: string;
  readonly stepId: string;
  readonly signal: AbortSignal;
}

/** `true` when the precondition holds, otherwise the reason it does not. */
export type PreconditionOutcome = true | { readonly ok: false; readonly message: string };

export type PreconditionChecker = (
  precondition: Precondition,
  context: PreconditionContext,
) => PreconditionOutcome | Promise<PreconditionOutcome>;

export interface PreconditionEntry {
  readonly check: PreconditionChecker;
  /** Error code when it fails (E101–E104); default E104. */
  readonly code?: ErrorCode | CustomErrorCode;
}

/** Checkers by `kind`. A step naming an unknown kind fails with E104 without calling the tool. */
export class PreconditionRegistry {
  readonly #checkers = new Map<string, PreconditionEntry>();

  register(kind: string, entry: PreconditionEntry | PreconditionChecker): this {
    if (this.#checkers.has(kind)) throw new TypeError(`precondition kind "${kind}" is already registered`);
    this.#checkers.set(kind, typeof entry === 'function' ? { check: entry } : entry);
    return this;
  }

  get(kind: string): PreconditionEntry | undefined {
    return this.#checkers.get(kind);
  }

  has(kind: string): boolean {
    return this.#checkers.has(kind);
  }

  kinds(): string[] {
    return [...this.#checkers.keys()];
  }

  /** Runs the checks in order and stops at the first that fails. */
  async check(
    preconditions: readonly Precondition[],
    context: PreconditionContext,
  ): Promise<{ ok: true } | { ok: false; code: ErrorCode | CustomErrorCode; message: string; index: number }> {
    for (const [index, precondition] of preconditions.entries()) {
      const entry = this.#checkers.get(precondition.kind);
      if (!entry) {
        return {
          ok: false,
          index,
          code: ErrorCodes.PRECONDITION_OTHER,
          message: `no checker for precondition kind "${precondition.kind}"`,
        };
      }
      let outcome: PreconditionOutcome;
      try {
        outcome = await entry.check(precondition, context);
      } catch (error) {
        outcome = {
          ok: false,
          message: messageOf(error),
        };
      }
      if (outcome !== true) {
        return {
          ok: false,
          index,
          code: entry.code ?? ErrorCodes.PRECONDITION_OTHER,
          message: outcome.message,
        };
      }
    }
    return { ok: true };
  }
}
