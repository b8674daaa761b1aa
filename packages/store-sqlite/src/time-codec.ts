import type { Bindable } from './bind-values.js';

/** Exactly what `toISOString` writes for years 0000–9999: the only texts stored as numbers. */
const ISO_TIME_LENGTH = 24;

/**
 * A time as its column stores it: epoch milliseconds (6 bytes) when the ISO text is exactly what
 * `new Date(ms).toISOString()` gives back, else the text itself (24+ bytes). Time columns have no
 * type affinity, so SQLite keeps each value as it was bound.
 */
export function encodeTime(value: string): string | bigint {
  const milliseconds = exactMilliseconds(value);
  // A bigint binds as an INTEGER (6 bytes); better-sqlite3 binds every number as an 8-byte REAL.
  return milliseconds === undefined ? value : BigInt(milliseconds);
}

/**
 * The epoch milliseconds of `value` when `new Date(ms).toISOString()` gives back exactly `value`,
 * else `undefined`: what a time may be stored as without losing a character.
 */
export function exactMilliseconds(value: string): number | undefined {
  // The events of a batch and the rows they change mostly share one time: parse it once.
  if (value === lastText) return lastExact;
  let exact: number | undefined;
  if (value.length === ISO_TIME_LENGTH) {
    const milliseconds = Date.parse(value);
    if (Number.isFinite(milliseconds) && new Date(milliseconds).toISOString() === value) exact = milliseconds;
  }
  lastText = value;
  lastExact = exact;
  return exact;
}

let lastText = '';
let lastExact: number | undefined;

/** The time text as it was appended. */
export function decodeTime(value: string | number): string {
  if (typeof value !== 'number') return value;
  if (value !== lastMilliseconds) {
    lastMilliseconds = value;
    lastDecoded = new Date(value).toISOString();
  }
  return lastDecoded;
}

let lastMilliseconds = Number.NaN;
let lastDecoded = '';

/**
 * `encodeTime` for a projection column, which takes whatever the event held: a non-string is kept
 * as the text a text column would have made of it, so reading it back gives the same string.
 */
export function encodeOptionalTime(value: Bindable): Bindable {
  if (typeof value === 'string') return encodeTime(value);
  return value === null ? null : String(value);
}

/** `decodeTime` for a nullable column. */
export function decodeOptionalTime(value: string | number | null): string | null {
  return value === null ? null : decodeTime(value);
}

/** SQL giving the ISO text of a time column (what the views show). */
export const isoTimeSql = (column: string): string =>
  `case when typeof(${column}) in ('integer', 'real') then strftime('%Y-%m-%dT%H:%M:%fZ', ${column} / 1000.0, 'unixepoch') else ${column} end`;
