import * as crypto from 'node:crypto';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { tooDeepMessage } from './nesting-depth.js';
import type { Plan } from './plan-schema.js';

/** A person's approval of one exact plan. Editing the plan changes its digest and voids it. */
export interface PlanAuthorization {
  /** Unique per approval: approving the same plan twice gives two authorizations (two runs). */
  readonly id: string;
  readonly planId: string;
  readonly planDigest: string;
  readonly by: string;
  readonly at: string;
}

/** Object keys as JSON strings, kept: plans and journal events repeat a few dozen keys endlessly. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_MAX = 10_000;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** An object's keys in their own order, then sorted, each sorted key quoted with its colon. */
interface KeyShape {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  readonly members: readonly string[];
}

/**
 * Shapes seen, by first key: journal events and plan steps come in a few dozen shapes, so sorting
 * and quoting their keys once saves most of an object's cost. Bounded: objects with keys of their
 * own (a tool's output) stop adding shapes and pay the sort.
 */
const keyShapes = new Map<string, KeyShape[]>();
const KEY_SHAPES_MAX = 1_000;
const SHAPES_PER_FIRST_KEY_MAX = 16;
let keyShapeCount = 0;

function sameKeys(left: readonly string[], right: readonly string[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) if (left[index] !== right[index]) return false;
  return true;
}

function keyShapeOf(keys: string[]): KeyShape {
  const first = keys.length === 0 ? '' : (keys[0] as string);
  const shapes = keyShapes.get(first);
  if (shapes !== undefined) for (const shape of shapes) if (sameKeys(shape.keys, keys)) return shape;
  // Own enumerable string keys, as JSON.stringify takes them, in plain string (UTF-16) order:
  // integer-like keys ("0", "12") too, which JavaScript itself enumerates first.
  const sorted = keys.length > 1 ? [...keys].sort() : keys;
  const shape: KeyShape = { keys, sorted, members: sorted.map((key) => `${quoteKey(key)}:`) };
  if (keyShapeCount < KEY_SHAPES_MAX && (shapes === undefined || shapes.length < SHAPES_PER_FIRST_KEY_MAX)) {
    keyShapeCount++;
    if (shapes === undefined) keyShapes.set(first, [shape]);
    else shapes.push(shape);
  }
  return shape;
}

/**
 * Objects and arrays with more members than this (and everything inside them) are joined: see
 * `canonicalObject`.
 */
const APPENDED_MEMBERS_MAX = 16;

/**
 * `joined`: members joined into one string, not appended. A string built by appending is a tree of
 * pieces; a large plan's thousands of such trees, alive until the plan's array is joined, cost more
 * in garbage collection than joining each object at once. A small object (a journal event) on its
 * own is cheaper appended.
 */
function canonicalObject(value: object, joined: boolean): string {
  const { sorted, members: quoted } = keyShapeOf(Object.keys(value));
  const count = sorted.length;
  if (count === 0) return '{}';
  const inner = joined || count > APPENDED_MEMBERS_MAX;
  if (!inner) {
    let text = '';
    for (let index = 0; index < count; index++) {
      const key = sorted[index] as string;
      const item = canonicalValue((value as Record<string, unknown>)[key], key, false);
      if (item !== undefined) text = text === '' ? `{${quoted[index]}${item}` : `${text},${quoted[index]}${item}`;
    }
    return text === '' ? '{}' : `${text}}`;
  }
  const members = new Array<string>(count);
  let kept = 0;
  for (let index = 0; index < count; index++) {
    const key = sorted[index] as string;
    const item = canonicalValue((value as Record<string, unknown>)[key], key, true);
    if (item !== undefined) members[kept++] = `${quoted[index]}${item}`;
  }
  if (kept < count) members.length = kept;
  return `{${members.join(',')}}`;
}

/** The texts of small non-negative integers (attempts, counts), made once. */
const SMALL_INTEGER_MAX = 1024;
const smallIntegers = new Array<string | undefined>(SMALL_INTEGER_MAX);

/**
 * A number as JSON.stringify writes it ('null' for NaN and ±Infinity, '0' for -0). Not `${value}`: V8 keeps
 * that text in its number-to-string cache, in the old generation, so each new number a journal
 * event carries (its seq, a duration) left a string there as garbage until a full collection,
 * about 100 bytes of a no-op step's. JSON.stringify writes the same text without the cache, as
 * fast for a fraction.
 */
function numberText(value: number): string {
  if (value >= 0 && value < SMALL_INTEGER_MAX && Number.isInteger(value)) {
    let text = smallIntegers[value];
    if (text === undefined) {
      text = JSON.stringify(value);
      smallIntegers[value] = text;
    }
    return text;
  }
  return JSON.stringify(value);
}

/** Characters JSON.stringify escapes in a string (lone surrogates too); most strings have none. */
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** `value` as JSON.stringify would write it (toJSON, boxed primitives, dropped members), keys sorted. */
function canonicalValue(value: unknown, key: string | number, joined: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      return ESCAPED.test(value) ? JSON.stringify(value) : `"${value}"`;
    case 'number':
      return numberText(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
    case 'bigint':
      break;
    default:
      return undefined;
  }
  if (value === null) return 'null';
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return canonicalValue(toJSON.call(value, String(key)), key, joined);
  if (typeof value === 'bigint') throw new TypeError('canonicalJson: a BigInt is not JSON');
  if (value instanceof Number || value instanceof String || value instanceof Boolean) {
    return canonicalValue(value.valueOf(), key, joined);
  }
  if (!Array.isArray(value)) return canonicalObject(value as object, joined);
  const items = new Array<string>(value.length);
  const inner = joined || value.length > APPENDED_MEMBERS_MAX;
  for (let index = 0; index < value.length; index++)
    items[index] = canonicalValue(value[index], index, inner) ?? 'null';
  return `[${items.join(',')}]`;
}

/**
 * JSON with object keys sorted (plain string order) at every level; `undefined` members dropped:
 * what JSON.stringify writes for the same value (so a value and its JSON round trip give the same
 * text), with sorted keys. For JSON input this is RFC 8785. Written out by hand rather than as a
 * key-sorting replacer of the native JSON.stringify, which is called for every value and copies
 * every object: as fast for a large plan, faster for the small objects every journal event is.
 */
export function canonicalJson(value: unknown): string {
  return canonicalValue(value, '', false) ?? 'null';
}

// `crypto.hash` (Node 20.12+) hashes in one call, 2.5× faster than a Hash object for the short
// inputs of execution ids; older Node 20 releases fall back to `createHash`.
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** SHA-256 of `text` (UTF-8) as 64 hex digits. */
export function sha256(text: string): string {
  return oneShotHash ? oneShotHash('sha256', text, 'hex') : createHash('sha256').update(text).digest('hex');
}

/** SHA-256 (hex) of the plan's canonical JSON: key order does not matter, every value does. */
export function planDigest(plan: Plan): string {
  let text: string;
  try {
    text = canonicalJson(plan);
  } catch (error) {
    // A plan validatePlan refused as too deep (E001): the JSON walk overflows the stack.
    if (!(error instanceof RangeError)) throw error;
    throw new StepwiseError(ErrorCodes.PLAN_INVALID, tooDeepMessage('plan too deep to hash'), { location: '/' });
  }
  return sha256(text);
}

export function approvePlan(plan: Plan, options: { by: string; at?: Date }): PlanAuthorization {
  if (!plan || typeof plan !== 'object' || typeof plan.id !== 'string' || !Array.isArray(plan.steps)) {
    throw new StepwiseError(ErrorCodes.PLAN_INVALID, 'approvePlan needs a plan: an object with an id and steps', {
      location: '/',
    });
  }
  if (!options?.by) {
    throw new StepwiseError(ErrorCodes.NOT_AUTHORIZED, 'approvePlan needs { by }: who approves', { location: '/by' });
  }
  return {
    id: `auth_${randomUUID()}`,
    planId: plan.id,
    planDigest: planDigest(plan),
    by: options.by,
    at: (options.at ?? new Date()).toISOString(),
  };
}

/**
 * Throws E002 when there is no usable authorization, E003 when it is for another plan or digest.
 * `digest`: `planDigest(plan)` when the caller has computed it already (hashing a large plan costs
 * milliseconds); it must be that plan's digest.
 */
export function verifyAuthorization(
  plan: Plan,
  authorization: PlanAuthorization | undefined | null,
  digest?: string,
): void {
  if (
    !authorization ||
    typeof authorization.id !== 'string' ||
    typeof authorization.by !== 'string' ||
    !authorization.by ||
    typeof authorization.planDigest !== 'string'
  ) {
    throw new StepwiseError(ErrorCodes.NOT_AUTHORIZED, 'the plan has no authorization: approve it first', {
      location: '/authorization',
    });
  }
  if (authorization.planId !== plan.id) {
    throw new StepwiseError(
      ErrorCodes.PLAN_MISMATCH,
      // Without the ids: either may hold a secret, and this message reaches the host unredacted.
      'the authorization is for another plan id: approve this plan',
      { location: '/authorization/planId' },
    );
  }
  const actual = digest ?? planDigest(plan);
  if (authorization.planDigest !== actual) {
    throw new StepwiseError(
      ErrorCodes.PLAN_MISMATCH,
      'the plan changed after it was approved (digest mismatch): approve it again',
      {
        location: '/authorization/planDigest',
        details: { expected: authorization.planDigest, actual },
      },
    );
  }
}

/**
 * `ex_` + hash of (runId, stepId, attempt[, sub]): the same inputs always give the same id.
 * 96 bits: collisions are out of reach (2^48 executions), and the id is repeated in every
 * journal row of the execution, so its length is paid many times.
 */
export function deriveExecutionId(runId: string, stepId: string, attempt: number, sub?: string): string {
  const parts = sub === undefined ? [runId, stepId, attempt] : [runId, stepId, attempt, sub];
  return `ex_${sha256(parts.join('\u0000')).slice(0, 24)}`;
}

/** The strict engine's run id: one authorization, one run. */
export function deriveRunId(authorization: PlanAuthorization): string {
  return `run_${sha256(`${authorization.id}\u0000${authorization.planDigest}`).slice(0, 24)}`;
}

// Random bytes drawn 4 KiB at a time: one getrandom call per 341 run ids instead of one per id,
// which was a visible share of a short run's fixed cost.
let entropy = Buffer.alloc(0);
let entropyOffset = 0;

/** A random run id with the same 96 bits as derived ones. */
export function newRunId(): string {
  if (entropyOffset + 12 > entropy.length) {
    entropy = randomBytes(4096);
    entropyOffset = 0;
  }
  const id = entropy.toString('hex', entropyOffset, entropyOffset + 12);
  entropyOffset += 12;
  return `run_${id}`;
}
