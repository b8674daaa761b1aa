/**
 * Large values for canonical JSON: a copy whose objects have their keys in sorted order, which the
 * native JSON.stringify then writes as canonical JSON (see `copiedJson` in canonical-json.ts).
 */
import { keyShapeOf } from './key-shapes.js';

/**
 * Arrays and objects with at least this many members are written from a sorted copy. Below it the
 * hand-written writer is as fast or faster (a 100-step plan: about a quarter faster); above, the
 * copy allocates a third as much (a 100,000-step plan: 50 MB against 140) and writes sooner.
 */
export const COPIED_MEMBERS_MIN = 1024;

/** What `sortedCopy` gives for a value JSON.stringify cannot be made to write in sorted order. */
export const UNSORTABLE: unique symbol = Symbol('unsortable');

/**
 * `value` as canonical JSON's writer sees it, for JSON.stringify to write: `toJSON` applied (as
 * often as the writer applies it) and boxed primitives unboxed, every object with its keys in
 * sorted order. An object or array that needs none of this is the value itself, not a copy: a plan's
 * `dependsOn` lists and in-order objects cost nothing. UNSORTABLE when an object has a key a copy
 * cannot put in place (see KeyShape.copyable); a BigInt throws as the writer does. The writer then
 * writes the value by hand, calling again any `toJSON` the copy had called (plans and journal
 * events have none; a Date's gives the same text twice).
 */
export function sortedCopy(value: unknown, key: string | number): unknown {
  if (typeof value === 'bigint') throw new TypeError('canonicalJson: a BigInt is not JSON');
  if (typeof value !== 'object' || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return sortedCopy(toJSON.call(value, String(key)), key);
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return value.valueOf();
  return Array.isArray(value) ? sortedArray(value) : sortedObject(value);
}

/** Whether a member needs `sortedCopy`: a primitive (but a BigInt) is written as it is. */
const needsCopy = (item: unknown) => (typeof item === 'object' && item !== null) || typeof item === 'bigint';

function sortedArray(value: readonly unknown[]): unknown {
  let copy: unknown[] | undefined;
  for (let index = 0; index < value.length; index++) {
    const item = value[index];
    const sorted = needsCopy(item) ? sortedCopy(item, index) : item;
    if (sorted === UNSORTABLE) return UNSORTABLE;
    // Holes stay holes in the slice, and JSON.stringify writes them as null, as the writer does.
    if (copy === undefined && sorted !== item) copy = value.slice(0, index);
    if (copy !== undefined) copy[index] = sorted;
  }
  return copy ?? value;
}

function sortedObject(value: object): unknown {
  const shape = keyShapeOf(Object.keys(value));
  if (!shape.copyable) return UNSORTABLE;
  const { sorted } = shape;
  const members = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined = shape.inOrder ? undefined : {};
  for (let index = 0; index < sorted.length; index++) {
    const key = sorted[index] as string;
    const item = members[key];
    const done = needsCopy(item) ? sortedCopy(item, key) : item;
    if (done === UNSORTABLE) return UNSORTABLE;
    if (copy === undefined && done !== item) {
      copy = {};
      for (let before = 0; before < index; before++) {
        const earlier = sorted[before] as string;
        copy[earlier] = members[earlier];
      }
    }
    if (copy !== undefined) copy[key] = done;
  }
  return copy ?? value;
}
