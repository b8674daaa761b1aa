import { ErrorCodes, StepwiseError } from '../errors.js';
import { MAX_NESTING_DEPTH, tooDeepMessage } from '../plan/nesting-depth.js';
import { toJsonPath } from '../plan/references.js';

/**
 * How deep a value the redactor walks: a run's events hold a plan, arguments or an output (each at
 * most `MAX_NESTING_DEPTH` deep) inside a few levels of envelope. Deeper values are refused (E004).
 */
export const MAX_REDACTION_DEPTH = 2 * MAX_NESTING_DEPTH;

/** Keys whose string values are secrets whatever they look like. */
const SECRET_KEY =
  /passw(?:or)?d|secret|api[_-]?key|apikey|authorization|private[_-]?key|credential|cookie|(?:^|[_-]|[a-z])token$/i;

export type Visit = (value: unknown, key: string | undefined, path: object[]) => unknown;

/** What every part of the walk shares: the text pass, the replacement, and the walk itself. */
interface Walk {
  readonly redactText: (text: string) => string;
  readonly redacted: string;
  readonly visit: Visit;
}

/** The key under which `child` sits in `parent`, for the location of an error. */
function keyOf(parent: object, child: unknown): string | number {
  if (Array.isArray(parent)) return parent.indexOf(child);
  return Object.keys(parent).find((key) => (parent as Record<string, unknown>)[key] === child) ?? '?';
}

/** The typed error for a value too deep to walk, located (and redacted) by the keys along `path`. */
function tooDeepError(walk: Walk, path: readonly object[], value: object): StepwiseError {
  const segments = path.map((parent, index) => keyOf(parent, path[index + 1] ?? value));
  return new StepwiseError(ErrorCodes.INPUT_INVALID, tooDeepMessage('cannot redact', MAX_REDACTION_DEPTH), {
    location: walk.redactText(toJsonPath(segments)),
  });
}

/**
 * The walk over a value that redacts every string, key, error and instance in it. Returns the
 * value itself when nothing changed, a redacted copy otherwise.
 */
export function createVisitor(redactText: (text: string) => string, redacted: string): Visit {
  // `path` holds the objects being visited (ancestors): a cycle is an object already on it.
  // Cheaper than a WeakSet per call, and events are shallow.
  const visit: Visit = (value, key, path) => {
    if (typeof value === 'string') {
      if (key !== undefined && SECRET_KEY.test(key) && value.length > 0 && value !== redacted) return redacted;
      return redactText(value);
    }
    if (typeof value !== 'object' || value === null) return value;
    if (path.includes(value)) return value;
    // A value too deep to walk is refused, not passed on unredacted (nor a RangeError thrown).
    if (path.length >= MAX_REDACTION_DEPTH) throw tooDeepError(walk, path, value);
    if (Array.isArray(value)) return visitArray(walk, value, path);
    if (value instanceof Error) return visitError(walk, value, path);
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return visitInstance(walk, value, key, path);
    return visitObject(walk, value as Record<string, unknown>, path);
  };
  const walk: Walk = { redactText, redacted, visit };
  return visit;
}

function visitObject(walk: Walk, value: Record<string, unknown>, path: object[]): unknown {
  path.push(value);
  let copy: Record<string, unknown> | undefined;
  for (const entryKey in value) {
    const entryValue = value[entryKey];
    const next = walk.visit(entryValue, entryKey, path);
    // Keys are journaled too: a secret used as a key is as visible as one used as a value.
    const nextKey = walk.redactText(entryKey);
    if (next !== entryValue || nextKey !== entryKey) {
      copy ??= { ...value };
      if (nextKey !== entryKey) delete copy[entryKey];
      copy[nextKey] = next;
    }
  }
  path.pop();
  return copy ?? value;
}

function visitArray(walk: Walk, value: unknown[], path: object[]): unknown[] {
  path.push(value);
  let copy: unknown[] | undefined;
  for (let index = 0; index < value.length; index++) {
    const next = walk.visit(value[index], undefined, path);
    if (next !== value[index]) {
      copy ??= value.slice();
      copy[index] = next;
    }
  }
  path.pop();
  return copy ?? value;
}

/**
 * Message, location, details and cause. A redacted StepwiseError stays one (same code,
 * `isInstance` true), so a host that switches on the code still can.
 */
function visitError(walk: Walk, value: Error, path: object[]): unknown {
  path.push(value);
  const fields = value as Error & { code?: unknown; location?: unknown; retryable?: unknown; details?: unknown };
  const message = walk.redactText(value.message);
  const location = typeof fields.location === 'string' ? walk.redactText(fields.location) : fields.location;
  const details = fields.details === undefined ? undefined : walk.visit(fields.details, 'details', path);
  const cause = value.cause === undefined ? undefined : walk.visit(value.cause, 'cause', path);
  path.pop();
  const same =
    message === value.message && location === fields.location && details === fields.details && cause === value.cause;
  if (same) return value;
  const options = cause === undefined ? undefined : { cause };
  const copy = StepwiseError.isInstance(value)
    ? new StepwiseError(value.code, message, {
        retryable: value.retryable,
        ...(typeof location === 'string' ? { location } : {}),
        ...(details === undefined ? {} : { details: details as Record<string, unknown> }),
        ...options,
      })
    : Object.assign(new Error(message, options), {
        ...('code' in value ? { code: fields.code } : {}),
        ...('location' in value ? { location } : {}),
        ...('retryable' in value ? { retryable: fields.retryable } : {}),
        ...(details === undefined ? {} : { details }),
      });
  copy.name = value.name;
  return copy;
}

/**
 * A class instance, URL, Buffer, Map…: what reaches the journal is its JSON form, so that is
 * what is checked. Unchanged values keep their identity; a redacted one is replaced by its
 * redacted JSON form (a Buffer by a Buffer of the redacted text).
 */
function visitInstance(walk: Walk, value: object, key: string | undefined, path: object[]): unknown {
  if (value instanceof Uint8Array) {
    const text = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
    const result = walk.visit(text, key, path);
    return result === text ? value : Buffer.from(result as string, 'utf8');
  }
  let serialized: unknown;
  try {
    serialized = JSON.parse(JSON.stringify(value) ?? 'null');
  } catch (error) {
    // Too deep to serialise: refused like any value too deep to walk.
    if (error instanceof RangeError) throw tooDeepError(walk, path, value);
    // Not serialisable (a cycle, a BigInt): the journal cannot store it either.
    return value;
  }
  const result = walk.visit(serialized, key, path);
  return result === serialized ? value : result;
}
