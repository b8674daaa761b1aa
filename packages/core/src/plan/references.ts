import { ErrorCodes, StepwiseError } from '../errors.js';

/** `{ "$ref": "stepId", "pointer": "/json/pointer" }`: an earlier step's output. */
export interface Reference {
  readonly stepId: string;
  /** RFC 6901 pointer into the output; "" is the whole output. */
  readonly pointer: string;
  /** JSON path of the reference inside the step's args, e.g. `/contents`. */
  readonly path: string;
  readonly form: 'object' | 'string';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function escapePointerToken(token: string): string {
  // Almost no key needs escaping; two regex passes per path segment add up over 100,000 steps.
  if (!token.includes('~') && !token.includes('/')) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Joins JSON path segments into a JSON pointer string: ["steps", 3, "id"] → "/steps/3/id". */
export function toJsonPath(segments: readonly (string | number)[]): string {
  return segments.map((segment) => `/${escapePointerToken(String(segment))}`).join('');
}

/** Reads `pointer` (RFC 6901) from `value`; `found: false` when any segment is missing. */
export function readPointer(value: unknown, pointer: string): { found: boolean; value?: unknown } {
  if (pointer === '') return { found: true, value };
  if (!pointer.startsWith('/')) return { found: false };
  let current: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(current) && /^(0|[1-9]\d*)$/.test(token) && Number(token) < current.length) {
      current = current[Number(token)];
    } else if (isPlainObject(current) && Object.hasOwn(current, token)) {
      current = current[token];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: current };
}

/** A `{ $ref, pointer? }` object with no other keys. */
function asObjectReference(value: unknown): { stepId: string; pointer: string } | undefined {
  if (!isPlainObject(value) || typeof value.$ref !== 'string') return undefined;
  const keys = Object.keys(value);
  if (keys.some((key) => key !== '$ref' && key !== 'pointer')) return undefined;
  const pointer = value.pointer;
  if (pointer !== undefined && typeof pointer !== 'string') return undefined;
  return { stepId: value.$ref, pointer: pointer ?? '' };
}

/** `"$id"` or `"$id/pointer"`; `"$$…"` is a literal dollar, not a reference. */
function asStringReference(value: unknown): { stepId: string; pointer: string } | undefined {
  if (typeof value !== 'string' || !value.startsWith('$') || value.startsWith('$$') || value.length < 2) {
    return undefined;
  }
  const slash = value.indexOf('/');
  return slash === -1
    ? { stepId: value.slice(1), pointer: '' }
    : { stepId: value.slice(1, slash), pointer: value.slice(slash) };
}

/** Called for each reference in document order; `segments` is the live path to it (copy to keep). */
export type ReferenceVisitor = (
  stepId: string,
  pointer: string,
  form: Reference['form'],
  segments: readonly (string | number)[],
) => void;

/**
 * Calls `visit` for every reference inside `args`, in document order, without building paths:
 * validation looks only at the step a reference names, and builds a path for the rare reference it
 * reports (a path per reference costs one string as long as the reference's depth).
 */
export function walkReferences(args: unknown, visit: ReferenceVisitor): void {
  const segments: (string | number)[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      const ref = asStringReference(value);
      if (ref) visit(ref.stepId, ref.pointer, 'string', segments);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const objectRef = asObjectReference(value);
    if (objectRef) {
      visit(objectRef.stepId, objectRef.pointer, 'object', segments);
      return;
    }
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        segments.push(index);
        walk(value[index]);
        segments.pop();
      }
      return;
    }
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      segments.push(key);
      walk((value as Record<string, unknown>)[key]);
      segments.pop();
    }
  };
  walk(args);
}

/** Every reference inside `args`, with its location as a JSON path. */
export function findReferences(args: unknown): Reference[] {
  const found: Reference[] = [];
  walkReferences(args, (stepId, pointer, form, segments) => {
    found.push({ stepId, pointer, path: toJsonPath(segments), form });
  });
  return found;
}

/**
 * Replaces references with the outputs they point at and unescapes `"$$…"` strings.
 * Throws E203 naming the reference's location when the output or the pointer is missing.
 */
export function resolveReferences(
  args: Record<string, unknown>,
  outputs: ReadonlyMap<string, unknown>,
): Record<string, unknown> {
  const resolve = (value: unknown, segments: (string | number)[]): unknown => {
    const ref = asObjectReference(value) ?? asStringReference(value);
    if (ref) {
      const location = toJsonPath(segments);
      if (!outputs.has(ref.stepId)) {
        throw new StepwiseError(ErrorCodes.REFERENCE_UNRESOLVED, `step "${ref.stepId}" has no output to reference`, {
          location,
        });
      }
      const read = readPointer(outputs.get(ref.stepId), ref.pointer);
      if (!read.found) {
        throw new StepwiseError(
          ErrorCodes.REFERENCE_UNRESOLVED,
          `pointer "${ref.pointer}" not found in the output of step "${ref.stepId}"`,
          { location },
        );
      }
      return read.value;
    }
    if (typeof value === 'string' && value.startsWith('$$')) return value.slice(1);
    if (Array.isArray(value)) return value.map((item, index) => resolve(item, [...segments, index]));
    if (isPlainObject(value)) {
      const copy: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) copy[key] = resolve(item, [...segments, key]);
      return copy;
    }
    return value;
  };
  return resolve(args, []) as Record<string, unknown>;
}
