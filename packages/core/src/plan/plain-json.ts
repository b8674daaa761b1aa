import { MAX_NESTING_DEPTH, tooDeepMessage } from './nesting-depth.js';

/** How many values (array items and object members, counted through every level) a value may hold. */
export const MAX_PLAIN_VALUES = 10_000_000;

/** Thrown by `plainJson` for a value nested deeper than MAX_NESTING_DEPTH (or one that contains itself). */
export class TooDeepForJson extends RangeError {}

/**
 * `value` as plain JSON data, read once: exactly what `JSON.parse(JSON.stringify(value))` gives (each
 * `toJSON` called and each getter read once; `undefined`, functions and symbols left out of objects
 * and `null` in arrays; `NaN` and the infinities `null`), made by walking the value instead of
 * printing and parsing it. A tool's output is kept in this form, so the journal's hash chain, the
 * store's row, a later step's reference and the result a host reads are one value, whatever the
 * tool's own object does after it returned. Strings are shared, not copied (they cannot change):
 * a 64 KB text costs nothing, where printing and parsing it cost about 80 µs.
 *
 * Throws what `JSON.stringify` throws (a BigInt, a `toJSON` or getter that throws), `TooDeepForJson`
 * past MAX_NESTING_DEPTH levels, and a RangeError past MAX_PLAIN_VALUES values, before walking them:
 * a sparse array 2³² − 1 long would otherwise keep the thread for minutes.
 */
export function plainJson(value: unknown): unknown {
  return new PlainWalk().value(value, 0, '');
}

class PlainWalk {
  #left = MAX_PLAIN_VALUES;

  /** The member `key` of its holder, as JSON.stringify serializes it: its `toJSON(key)` first, once. */
  value(value: unknown, depth: number, key: string | number): unknown {
    if ((typeof value === 'object' && value !== null) || typeof value === 'bigint' || typeof value === 'function') {
      const toJson = (value as Plain).toJSON;
      if (typeof toJson === 'function') return this.#serialized(toJson.call(value, String(key)), depth);
    }
    return this.#serialized(value, depth);
  }

  #serialized(value: unknown, depth: number): unknown {
    switch (typeof value) {
      case 'string':
      case 'boolean':
        return value;
      case 'number':
        // JSON has no -0: it prints as 0.
        return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
      case 'bigint':
        throw new TypeError('Do not know how to serialize a BigInt');
      case 'object':
        break;
      default:
        // undefined, a function, a symbol: left out of an object, null in an array.
        return undefined;
    }
    if (value === null) return null;
    // Boxed primitives are printed as what they box, as JSON.stringify does.
    if (value instanceof Number || value instanceof String || value instanceof Boolean) {
      return this.#serialized(value.valueOf(), depth);
    }
    if (value instanceof BigInt) throw new TypeError('Do not know how to serialize a BigInt');
    if (depth >= MAX_NESTING_DEPTH) throw new TooDeepForJson(tooDeepMessage('value'));
    return Array.isArray(value) ? this.#array(value, depth) : this.#object(value as Plain, depth);
  }

  #array(array: readonly unknown[], depth: number): unknown[] {
    this.#count(array.length);
    const copy: unknown[] = new Array(array.length);
    for (let index = 0; index < array.length; index++) {
      const item = this.value(array[index], depth + 1, index);
      copy[index] = item === undefined ? null : item;
    }
    return copy;
  }

  /** Own enumerable string keys, in their order: a Map or a Set has none, a typed array its indexes. */
  #object(object: Plain, depth: number): Plain {
    const keys = Object.keys(object);
    this.#count(keys.length);
    const copy: Plain = {};
    for (const key of keys) {
      const item = this.value(object[key], depth + 1, key);
      if (item === undefined) continue;
      // JSON.parse makes `__proto__` an own member; assigning it would set the copy's prototype.
      if (key === '__proto__') {
        Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
      } else copy[key] = item;
    }
    return copy;
  }

  #count(values: number): void {
    this.#left -= values;
    if (this.#left < 0) {
      throw new RangeError(
        `more than ${MAX_PLAIN_VALUES.toLocaleString('en-US')} values (array items and object members)`,
      );
    }
  }
}

type Plain = Record<string, unknown>;
