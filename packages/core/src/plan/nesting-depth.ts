/**
 * How many objects and arrays may nest inside a plan (counted from the plan), a tool's arguments
 * or a tool's output (counted from the value). Deeper values are refused with a typed error: every
 * walk over them (the digest's canonical JSON, the redactor, the stores' JSON) recurses, and a
 * value thousands of levels deep overflows the stack with an untyped `RangeError`.
 */
export const MAX_NESTING_DEPTH = 256;

/** Is anything in `value` nested deeper than `depth` levels? Stops as soon as it knows. */
function deeper(value: unknown, depth: number): boolean {
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
