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

/** A `{ $ref, pointer? }` object with no other keys: the step id it names, else undefined. */
function objectReferenceId(value: unknown): string | undefined {
  if (!isPlainObject(value) || typeof value.$ref !== 'string') return undefined;
  const pointer = value.pointer;
  if (pointer !== undefined && typeof pointer !== 'string') return undefined;
  // A key loop rather than Object.keys: no array per object (own keys only, as Object.keys gives).
  for (const key in value) {
    if (key !== '$ref' && key !== 'pointer' && Object.hasOwn(value, key)) return undefined;
  }
  return value.$ref;
}

function asObjectReference(value: unknown): { stepId: string; pointer: string } | undefined {
  const stepId = objectReferenceId(value);
  return stepId === undefined ? undefined : { stepId, pointer: (value as { pointer?: string }).pointer ?? '' };
}

/** `"$id"` or `"$id/pointer"`: where the step id ends (the first `/`, or the end), else -1. `"$$…"` is a literal dollar. */
function stringReferenceEnd(value: unknown): number {
  if (
    typeof value !== 'string' ||
    value.length < 2 ||
    value.charCodeAt(0) !== DOLLAR ||
    value.charCodeAt(1) === DOLLAR
  ) {
    return -1;
  }
  const slash = value.indexOf('/');
  return slash === -1 ? value.length : slash;
}

const DOLLAR = 36;

function asStringReference(value: unknown): { stepId: string; pointer: string } | undefined {
  const end = stringReferenceEnd(value);
  return end === -1 ? undefined : { stepId: (value as string).slice(1, end), pointer: (value as string).slice(end) };
}

/**
 * Called for each reference in document order. The step id it names is `text.slice(from, to)`
 * (left uncut: validation looks it up by range); `reference` is the reference itself (its pointer
 * is read only by who needs it) and `segments` the live path to it (copy to keep), empty unless
 * the walk was asked for paths.
 */
export type ReferenceVisitor = (
  text: string,
  from: number,
  to: number,
  form: Reference['form'],
  reference: unknown,
  segments: readonly (string | number)[],
) => void;

/**
 * Calls `visit` for every reference inside `args`, in document order. Validation asks only for
 * the step each reference names: no paths, no pointers, nothing allocated (a path per reference
 * costs a string as long as the reference is deep). With a `depth`, the walk also measures how
 * deep `args` nests, as `nesting-depth` counts (bytes are leaves), and stops, returning false, at
 * an object or array more than `depth` levels down: validation spares a second walk over the args.
 */
export function walkReferences(
  args: unknown,
  visit: ReferenceVisitor,
  withPaths = false,
  depth = Number.POSITIVE_INFINITY,
): boolean {
  return walkValue(args, visit, withPaths ? [] : undefined, depth);
}

function walkValue(
  value: unknown,
  visit: ReferenceVisitor,
  segments: (string | number)[] | undefined,
  depth: number,
): boolean {
  if (typeof value === 'string') {
    const end = stringReferenceEnd(value);
    if (end !== -1) visit(value, 1, end, 'string', value, segments ?? NO_SEGMENTS);
    return true;
  }
  // Bytes hold numbers only: no reference, and nothing nests inside them.
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return true;
  if (depth === 0) return false;
  const objectId = objectReferenceId(value);
  if (objectId !== undefined) {
    visit(objectId, 0, objectId.length, 'object', value, segments ?? NO_SEGMENTS);
    return true;
  }
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      segments?.push(index);
      const within = walkValue(value[index], visit, segments, depth - 1);
      segments?.pop();
      if (!within) return false;
    }
    return true;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    segments?.push(key);
    const within = walkValue((value as Record<string, unknown>)[key], visit, segments, depth - 1);
    segments?.pop();
    if (!within) return false;
  }
  return true;
}

const NO_SEGMENTS: readonly (string | number)[] = [];

/** Every reference inside `args`, with its location as a JSON path. */
export function findReferences(args: unknown): Reference[] {
  const found: Reference[] = [];
  walkReferences(
    args,
    (text, from, to, form, reference, segments) => {
      const pointer = form === 'string' ? text.slice(to) : ((reference as { pointer?: string }).pointer ?? '');
      found.push({ stepId: text.slice(from, to), pointer, path: toJsonPath(segments), form });
    },
    true,
  );
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
