/**
 * Canonical JSON: the text every digest and chain value of Stepwise hashes (plans, execution ids,
 * journal events). Written by hand for speed; see `canonicalJson`.
 */
import { appendedFormOf, keyShapeOf } from './key-shapes.js';
import { COPIED_MEMBERS_MIN, sortedArray, sortedObject, UNSORTABLE } from './sorted-copy.js';

/**
 * Objects and arrays with more members than this (and everything inside them) are joined: see
 * `canonicalObject`.
 */
const APPENDED_MEMBERS_MAX = 16;

/**
 * `joined`: members joined into one string, not appended. A string built by appending is a tree of
 * pieces; a large plan's thousands of such trees, alive until the plan's array is joined, cost more
 * in garbage collection than joining each object at once. A small object (a journal event) on its
 * own is cheaper appended: a plain string member goes in with its key and quotes in one step (texts
 * the shape keeps, see `appendedFormOf`), one intermediate string fewer per member. Members are read
 * one at a time, in sorted order, as each is written (as JSON.stringify reads them): a getter or a
 * `toJSON` that changes a later member is seen.
 */
function canonicalObject(value: object, joined: boolean): string {
  const shape = keyShapeOf(Object.keys(value));
  const { sorted } = shape;
  const count = sorted.length;
  if (count === 0) return '{}';
  if (!joined && count >= COPIED_MEMBERS_MIN) {
    // The shape already made: the copy would otherwise list and sort the object's keys again.
    const text = copiedJson(sortedObject(value, shape));
    if (text !== undefined) return text;
  }
  const record = value as Record<string, unknown>;
  if (!joined && count <= APPENDED_MEMBERS_MAX) {
    const form = appendedFormOf(shape);
    let text = '';
    for (let index = 0; index < count; index++) {
      const key = sorted[index] as string;
      const member = record[key];
      if (typeof member === 'string' && !ESCAPED.test(member)) {
        text = text === '' ? `${form.openingQuote[index]}${member}"` : `${text}${form.followingQuote[index]}${member}"`;
        continue;
      }
      const item = canonicalValue(member, key, false);
      if (item !== undefined)
        text = text === '' ? `${form.opening[index]}${item}` : `${text}${form.following[index]}${item}`;
    }
    return text === '' ? '{}' : `${text}}`;
  }
  const quoted = shape.members;
  const members = new Array<string>(count);
  let kept = 0;
  for (let index = 0; index < count; index++) {
    const key = sorted[index] as string;
    const item = canonicalValue(record[key], key, true);
    if (item !== undefined) members[kept++] = `${quoted[index]}${item}`;
  }
  if (kept < count) members.length = kept;
  return `{${members.join(',')}}`;
}

/** The texts of small non-negative integers (attempts, counts), made once. */
const SMALL_INTEGER_MAX = 1024;
const smallIntegers = new Array<string | undefined>(SMALL_INTEGER_MAX);

/**
 * A number as JSON.stringify writes it ('null' for NaN and ±Infinity, '0' for -0). Not
 * `${value}`: V8 keeps that text in its number-to-string cache, in the old generation, so each new
 * number a journal event carries (its seq, a duration) left a string there as garbage until a full
 * collection, about 100 bytes of a no-op step's. JSON.stringify writes the same text without the
 * cache, as fast for a fraction.
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
  if (!joined && value.length >= COPIED_MEMBERS_MIN) {
    const text = copiedJson(sortedArray(value));
    if (text !== undefined) return text;
  }
  const items = new Array<string>(value.length);
  const inner = joined || value.length > APPENDED_MEMBERS_MAX;
  for (let index = 0; index < value.length; index++)
    items[index] = canonicalValue(value[index], index, inner) ?? 'null';
  return `[${items.join(',')}]`;
}

/**
 * A large object or array (and everything in it) written by the native JSON.stringify, from its copy
 * with every object's keys in sorted order (see `sortedCopy`; the callers have checked the value
 * itself as it does): a third of the allocation of writing it here, and faster from some thousands
 * of members. `undefined` where the copy could not keep that order.
 */
function copiedJson(copy: unknown): string | undefined {
  return copy === UNSORTABLE ? undefined : JSON.stringify(copy);
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
