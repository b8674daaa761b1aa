/**
 * How many objects and arrays may nest inside a plan (counted from the plan), a tool's arguments
 * or a tool's output (counted from the value). Deeper values are refused with a typed error: every
 * walk over them (the digest's canonical JSON, the redactor, the stores' JSON) recurses, and a
 * value thousands of levels deep overflows the stack with an untyped `RangeError`.
 */
export const MAX_NESTING_DEPTH = 256;

/** Is anything in `value` nested deeper than `depth` levels? Stops as soon as it knows. */
export function deeper(value: unknown, depth: number): boolean {
  // Bytes hold numbers only: nothing nests inside them, and walking a megabyte of them costs.
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return false;
  if (depth === 0) return true;
  // Strings, numbers and the like are skipped without a call: a plan is mostly such leaves.
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      if (typeof item === 'object' && item !== null && deeper(item, depth - 1)) return true;
    }
    return false;
  }
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (typeof item === 'object' && item !== null && deeper(item, depth - 1) && Object.hasOwn(value, key)) return true;
  }
  return false;
}

/** How many levels a step's `args` may nest: the plan, `steps` and the step are three. */
export const ARGS_NESTING_DEPTH = MAX_NESTING_DEPTH - 3;

/**
 * `deeper(plan, MAX_NESTING_DEPTH)` leaving out the `args` of each step of the plan's own `steps`
 * array: validation measures those while it walks their references (see `walkReferences`), which
 * spares a second walk over the bulk of a plan. Any other value is measured whole.
 */
export function deeperOutsideArgs(plan: unknown): boolean {
  if (typeof plan !== 'object' || plan === null || Array.isArray(plan) || !Array.isArray((plan as Plain).steps)) {
    return deeper(plan, MAX_NESTING_DEPTH);
  }
  for (const key in plan) {
    const value = (plan as Plain)[key];
    const own = Object.hasOwn(plan, key);
    if (
      key === 'steps' && own ? stepsDeeperOutsideArgs(value as unknown[]) : deeper(value, MAX_NESTING_DEPTH - 1) && own
    ) {
      return true;
    }
  }
  return false;
}

type Plain = Record<string, unknown>;

/** The steps array sits at MAX_NESTING_DEPTH - 1 levels, each step at one less, a step's fields at two less. */
function stepsDeeperOutsideArgs(steps: readonly unknown[]): boolean {
  for (let index = 0; index < steps.length; index++) {
    const step = steps[index];
    if (typeof step !== 'object' || step === null || Array.isArray(step) || ArrayBuffer.isView(step)) {
      if (deeper(step, MAX_NESTING_DEPTH - 2)) return true;
      continue;
    }
    for (const key in step) {
      if (key === 'args' && Object.hasOwn(step, key)) continue;
      if (deeper((step as Plain)[key], ARGS_NESTING_DEPTH) && Object.hasOwn(step, key)) return true;
    }
  }
  return false;
}

/**
 * The path (segments) to the first object or array nested deeper than `limit` inside `value`, or
 * undefined when there is none. A value that contains itself is reported too: its walk never
 * ends. The walk stops at `limit + 1` levels, so its own recursion is bounded.
 */
export function tooDeepPath(value: unknown, limit: number = MAX_NESTING_DEPTH): (string | number)[] | undefined {
  // The common answer (nothing too deep) without building a path; the path only for the error.
  if (!deeper(value, limit)) return undefined;
  const segments: (string | number)[] = [];
  let current = value as Record<string, unknown>;
  for (let depth = limit; depth > 0; depth--) {
    const keys = Array.isArray(current) ? current.keys() : Object.keys(current);
    for (const key of keys) {
      if (!deeper(current[key], depth - 1)) continue;
      segments.push(key);
      current = current[key] as Record<string, unknown>;
      break;
    }
  }
  return segments;
}

/** The message of every "too deep" error, so hosts see one wording wherever it is caught. */
export function tooDeepMessage(what: string, limit: number = MAX_NESTING_DEPTH): string {
  return `${what}: objects and arrays nested more than ${limit} levels deep (or a value that contains itself)`;
}
