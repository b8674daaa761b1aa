/** The bytes `events.chain` holds. */
export const CHAIN_BYTES = 17;

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The 6-bit value of each base64url character by its code, -1 for any other character. */
const SEXTETS = new Int8Array(128).fill(-1);
for (let index = 0; index < BASE64URL.length; index++) SEXTETS[BASE64URL.charCodeAt(index)] = index;

/** The 6 bits of `text`'s character at `index`; -1 for a character that is not base64url. */
function sextet(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return code < 128 ? (SEXTETS[code] as number) : -1;
}

/**
 * The 17 bytes `events.chain` holds for a chain value (schema version 8), instead of 32 bytes of
 * `"chain":"…"` in the payload; `undefined` for a value of any other form (kept in the payload) than
 * core's (`chainValue`): 22 base64url characters, 132 bits. With two zero characters they are 18
 * bytes whose last 12 bits are zero, so the first 17 hold the whole value. Decoded here rather than
 * by `Buffer.from(…, 'base64url')`: it runs for every event, and this is the same bytes without a
 * native call or a second string. `into`: the 17-byte buffer to write them to (a new one without);
 * when the value has another form it may be partly written.
 */
export function chainBytes(value: unknown, into?: Buffer): Buffer | undefined {
  if (typeof value !== 'string' || value.length !== 22) return undefined;
  const bytes = into ?? Buffer.allocUnsafe(CHAIN_BYTES);
  for (let group = 0; group < 6; group++) {
    const at = group * 4;
    const first = sextet(value, at);
    const second = sextet(value, at + 1);
    const third = group === 5 ? 0 : sextet(value, at + 2);
    const fourth = group === 5 ? 0 : sextet(value, at + 3);
    if ((first | second | third | fourth) < 0) return undefined;
    const bits = (first << 18) | (second << 12) | (third << 6) | fourth;
    bytes[group * 3] = bits >> 16;
    bytes[group * 3 + 1] = (bits >> 8) & 0xff;
    if (group < 5) bytes[group * 3 + 2] = bits & 0xff;
  }
  return bytes;
}

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
