import { deeperOutsideArgs } from '../plan/nesting-depth.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { isPlainValidPlan } from '../plan/plan-shape-check.js';
import type { PlanValidation } from '../plan/validate-plan.js';

/** What a run needs from its plan's check: the verdict, and the digest when it is already known. */
export interface CheckedPlan {
  readonly validation: PlanValidation;
  readonly digest?: string;
}

type Passed = { readonly digest: string; readonly validation: PlanValidation & { readonly ok: true } };

/**
 * The plans one engine has found valid, so that a host running the same plan object again (as
 * hosts do with a fixed workflow) pays for its digest, which the run needs anyway, instead of a
 * whole validation. A plan object is only ever matched by its digest: one changed since it passed
 * (a step added, an argument edited) hashes differently and is validated again from the start.
 *
 * Only plain-data plans are remembered (validation used the object itself, no schema copy), only
 * with a catalog that can only grow (a `ToolRegistry`: a tool once registered stays, with its
 * schema), and only valid ones: what a later run would be told about an invalid plan may differ.
 */
export class ValidatedPlans {
  readonly #passed = new WeakMap<object, Passed>();
  readonly #remember: boolean;

  constructor(remember: boolean) {
    this.#remember = remember;
  }

  check(input: unknown, validate: (plan: unknown) => PlanValidation): CheckedPlan {
    const passed = this.#remember && typeof input === 'object' && input !== null ? this.#passed.get(input) : undefined;
    if (passed) {
      const digest = unchangedDigest(input as object, passed.digest);
      if (digest !== undefined) return { validation: passed.validation, digest };
    }
    const validation = validate(input);
    if (!validation.ok || !this.#remember || validation.plan !== input) return { validation };
    const digest = planDigest(validation.plan);
    this.#passed.set(input as object, { digest, validation });
    return { validation, digest };
  }
}

/** The plan's digest when it is still plain data hashing to `digest`; otherwise undefined. */
function unchangedDigest(plan: object, digest: string): string | undefined {
  // The same guards validation starts with: a plan made too deep, or no longer plain data, since it passed.
  if (deeperOutsideArgs(plan) || !isPlainValidPlan(plan)) return undefined;
  try {
    return planDigest(plan as Plan) === digest ? digest : undefined;
  } catch {
    return undefined;
  }
}
