import type { Bindable } from './bind-values.js';

/** Exactly what `toISOString` writes for years 0000–9999: the only texts stored as numbers. */
const ISO_TIME_LENGTH = 24;

/**
 * A time as its column stores it: epoch milliseconds (6 bytes) when the ISO text is exactly what
 * `new Date(ms).toISOString()` gives back, else the text itself (24+ bytes). Time columns have no
 * type affinity, so SQLite keeps each value as it was bound.
 */
export function encodeTime(value: string): string | bigint {
  const slot = exactSlot(value);
  if (times[slot] === undefined) return value;
  // A bigint binds as an INTEGER (6 bytes); better-sqlite3 binds every number as an 8-byte REAL.
  let integer = integers[slot];
  if (integer === undefined) {
    integer = BigInt(times[slot] as number);
    integers[slot] = integer;
  }
  return integer;
}

/**
 * The epoch milliseconds of `value` when `new Date(ms).toISOString()` gives back exactly `value`,
 * else `undefined`: what a time may be stored as without losing a character.
 */
export function exactMilliseconds(value: string): number | undefined {
  return times[exactSlot(value)];
}

/**
 * The last few texts `exactMilliseconds` parsed, with their milliseconds and (once asked for) their
 * bigint: an append meets each time several times (an event's `at`, the next one's, a start time,
 * the rows the batch changes), alternating between a few of them.
 */
const CACHED_TIMES = 4;
const texts: string[] = new Array(CACHED_TIMES).fill('');
const times: (number | undefined)[] = new Array(CACHED_TIMES).fill(undefined);
const integers: (bigint | undefined)[] = new Array(CACHED_TIMES).fill(undefined);
let nextSlot = 0;

/** The cache slot holding `value`, parsed into it when it was not there. */
function exactSlot(value: string): number {
  for (let slot = 0; slot < CACHED_TIMES; slot++) if (texts[slot] === value) return slot;
  let exact: number | undefined;
  if (value.length === ISO_TIME_LENGTH) {
    const milliseconds = Date.parse(value);
    if (Number.isFinite(milliseconds) && new Date(milliseconds).toISOString() === value) exact = milliseconds;
  }
  const slot = nextSlot;
  nextSlot = (slot + 1) % CACHED_TIMES;
  texts[slot] = value;
  times[slot] = exact;
  integers[slot] = undefined;
  return slot;
}

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
