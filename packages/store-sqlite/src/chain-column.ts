/** A chain value as core writes it: 22 base64url characters, 132 bits (see core's `chainValue`). */
const CHAIN_TEXT = /^[A-Za-z0-9_-]{22}$/;

/**
 * The 17 bytes `events.chain` holds for a chain value (schema version 8), instead of 32 bytes of
 * `"chain":"…"` in the payload; `undefined` for a value of any other form (kept in the payload).
 * 22 base64url characters are 132 bits: with two zero characters they decode to 18 bytes whose
 * last 12 bits are zero, so the first 17 hold the whole value.
 */
export function chainBytes(value: unknown): Buffer | undefined {
  if (typeof value !== 'string' || !CHAIN_TEXT.test(value)) return undefined;
  return Buffer.from(`${value}AA`, 'base64url').subarray(0, 17);
}

const ZERO = Buffer.alloc(1);

/** The chain value `chainBytes` was given. */
export const chainText = (bytes: Uint8Array): string => Buffer.concat([bytes, ZERO]).toString('base64url').slice(0, 22);
