import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { isPlainValidPlan } from '../plan/plan-shape-check.js';
import type { PlanValidation } from '../plan/validate-plan.js';

/** What a run needs from its plan's check: the verdict, and the digest when it is already known. */
export interface CheckedPlan {
  readonly validation: PlanValidation;
  readonly digest?: string;
}

interface Passed {
  readonly digest: string;
  readonly validation: PlanValidation & { readonly ok: true };
  /** The plan's JSON when it passed, if short enough to keep (see `unchangedDigest`). */
  readonly json: string | undefined;
}

/**
 * Plans whose JSON is longer than this are compared by digest alone: keeping the text would hold a
 * second copy of a large plan for as long as the plan lives.
 */
const KEPT_JSON_MAX = 1 << 20;

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
      if (unchanged(input as object, passed)) return { validation: passed.validation, digest: passed.digest };
    }
    const validation = validate(input);
    if (!validation.ok || !this.#remember || validation.plan !== input) return { validation };
    const digest = planDigest(validation.plan);
    const json = JSON.stringify(validation.plan);
    this.#passed.set(input as object, { digest, validation, json: json.length <= KEPT_JSON_MAX ? json : undefined });
    return { validation, digest };
  }
}

/**
 * Whether the plan is still plain data with the content it passed with. Its JSON text is compared
 * where it was kept: for plain data, equal JSON means an equal tree of values, hence an equal
 * canonical form and digest, and the engine's native `JSON.stringify` costs a fraction of the
 * canonical form and its hash (a reused one-step plan pays this on every run). A change of key
 * order alone makes the texts differ, and the plan is then validated again: a wasted validation,
 * never a wrong answer.
 */
function unchanged(plan: object, passed: Passed): boolean {
  // The guard validation starts with: no longer plain data, or nested too deep outside its args
  // (the shape check measures that too), since it passed.
  if (!isPlainValidPlan(plan)) return false;
  try {
    return passed.json !== undefined
      ? JSON.stringify(plan) === passed.json
      : planDigest(plan as Plan) === passed.digest;
  } catch {
    return false;
  }
}
