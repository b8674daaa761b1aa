import { isUtf8 } from 'node:buffer';

/** How many leading bytes decide whether a file is binary (git's heuristic). */
const SNIFF_BYTES = 8000;

/** A file is binary when its first 8000 bytes contain a NUL byte. */
export function isBinary(buffer: Uint8Array): boolean {
  const end = Math.min(buffer.length, SNIFF_BYTES);
  for (let index = 0; index < end; index++) if (buffer[index] === 0) return true;
  return false;
}

/** The largest length ≤ `limit` that does not split a UTF-8 character. */
export function utf8Boundary(buffer: Uint8Array, limit: number): number {
  if (limit >= buffer.length) return buffer.length;
  let cut = limit;
  // Continuation bytes look like 10xxxxxx; back up to the start of the character.
  while (cut > 0 && ((buffer[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return cut;
}

export type LineEnding = 'lf' | 'crlf' | 'mixed' | 'none';

/** Which line ending a text uses. */
export function lineEndingOf(text: string): LineEnding {
  let crlf = 0;
  let lf = 0;
  let index = text.indexOf('\n');
  while (index !== -1) {
    if (index > 0 && text.charCodeAt(index - 1) === 13) crlf++;
    else lf++;
    index = text.indexOf('\n', index + 1);
  }
  if (crlf === 0 && lf === 0) return 'none';
  if (crlf === 0) return 'lf';
  if (lf === 0) return 'crlf';
  return 'mixed';
}

export type TextEncodingName = 'utf8' | 'latin1';

/** Decodes text: UTF-8 when valid, otherwise Latin-1 (every byte maps to one character). */
export function decodeText(buffer: Buffer): { text: string; encoding: TextEncodingName; bom: boolean } {
  if (isUtf8(buffer)) {
    const bom = buffer.length >= 3 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf;
    return { text: buffer.toString('utf8'), encoding: 'utf8', bom };
  }
  return { text: buffer.toString('latin1'), encoding: 'latin1', bom: false };
}

/** 1-based line number of a character offset, given the sorted offsets where lines start. */
export function lineOfOffset(lineStarts: readonly number[], offset: number): number {
  let low = 0;
  let high = lineStarts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if ((lineStarts[middle] ?? 0) <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

/** Offsets where each line starts (the first is 0). */
export function lineStartsOf(text: string): number[] {
  const starts = [0];
  let index = text.indexOf('\n');
  while (index !== -1) {
    starts.push(index + 1);
    index = text.indexOf('\n', index + 1);
  }
  return starts;
}
