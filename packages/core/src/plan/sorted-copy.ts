/**
 * Large values for canonical JSON: a copy of plain data with every object's keys in sorted order,
 * which the native JSON.stringify then writes as canonical JSON (see `copiedJson` in
 * canonical-json.ts).
 */
import { type KeyShape, keyShapeOf } from './key-shapes.js';

/**
 * Arrays and objects with at least this many members are written from a sorted copy. Below it the
 * hand-written writer is as fast or faster (a 100-step plan: about a quarter faster); above, the
 * copy allocates about a third as much (a 100,000-step plan) and writes sooner.
 */
export const COPIED_MEMBERS_MIN = 1024;

/** What `sortedCopy` gives for a value it leaves to the hand-written writer. */
export const UNSORTABLE: unique symbol = Symbol('unsortable');

/**
 * `value` as a new tree of plain objects, arrays and JSON primitives whose objects have their keys
 * in sorted order, so that the native JSON.stringify writes exactly what the hand-written writer
 * would: members it drops (undefined, functions, symbols) are left out of objects and written as
 * null in arrays, and every member is read once. UNSORTABLE, before anything of that kind is called
 * or read further, for what the two could write differently: a `toJSON` method (the writer applies
 * it again to its result, the native one does not), a BigInt (with or without a `toJSON`), a boxed
 * primitive (unboxed by `valueOf` here, by internal slot natively), or an object with a key a copy
 * cannot keep in order (see KeyShape.copyable). The writer then writes the whole value by hand,
 * reading again the members read here (a getter runs twice then; plans and journal events have
 * none).
 */
export function sortedCopy(value: unknown): unknown {
  if (typeof value === 'bigint') return UNSORTABLE;
  if (typeof value !== 'object' || value === null) return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return UNSORTABLE;
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return UNSORTABLE;
  return Array.isArray(value) ? sortedArray(value) : sortedObject(value);
}

/** A member the writer drops from an object (and writes as null in an array). */
const dropped = (item: unknown) => item === undefined || typeof item === 'function' || typeof item === 'symbol';

/** `sortedCopy` of an array, which the caller checked as `sortedCopy` does. */
export function sortedArray(value: readonly unknown[]): unknown {
  const copy = new Array<unknown>(value.length);
  for (let index = 0; index < value.length; index++) {
    const item = value[index];
    const sorted = dropped(item) ? null : sortedCopy(item);
    if (sorted === UNSORTABLE) return UNSORTABLE;
    copy[index] = sorted;
  }
  return copy;
}

/** `sortedCopy` of an object the caller checked as `sortedCopy` does; `shape`: its keys', if known. */
export function sortedObject(value: object, shape: KeyShape = keyShapeOf(Object.keys(value))): unknown {
  if (!shape.copyable) return UNSORTABLE;
  const { sorted } = shape;
  const members = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (let index = 0; index < sorted.length; index++) {
    const key = sorted[index] as string;
    const item = members[key];
    if (dropped(item)) continue;
    const done = sortedCopy(item);
    if (done === UNSORTABLE) return UNSORTABLE;
    copy[key] = done;
  }
  return copy;
}
