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

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The chain value `chainBytes` was given: 15 bytes are 20 characters, and the last two characters
 * hold the 12 bits after them (read for every event, so without copying the bytes).
 */
export function chainText(bytes: Uint8Array): string {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fifteenth = buffer[15] as number;
  const sixteenth = buffer[16] as number;
  return (
    buffer.toString('base64url', 0, 15) +
    BASE64URL[fifteenth >> 2] +
    BASE64URL[((fifteenth & 3) << 4) | (sixteenth >> 4)]
  );
}
