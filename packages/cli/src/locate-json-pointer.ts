/** A 1-based position in a text file. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Where each value of a JSON document starts, by JSON pointer (an object member is located at
 * its key, so "unknown key" and "bad value" errors point at the line a person would edit).
 * Tolerant: it stops quietly at the first syntax error, keeping what it found so far.
 */
export function indexJsonPositions(text: string): Map<string, TextPosition> {
  const positions = new Map<string, TextPosition>();
  let index = 0;
  let line = 1;
  let lineStart = 0;

  const position = (at: number): TextPosition => ({ line, column: at - lineStart + 1 });
  const skipWhitespace = () => {
    while (index < text.length) {
      const char = text[index];
      if (char === '\n') {
        line += 1;
        lineStart = index + 1;
      } else if (char !== ' ' && char !== '\t' && char !== '\r') return;
      index += 1;
    }
  };
  const readString = (): string => {
    const start = index;
    index += 1;
    while (index < text.length && text[index] !== '"') index += text[index] === '\\' ? 2 : 1;
    index += 1;
    return JSON.parse(text.slice(start, index)) as string;
  };
  const readValue = (pointer: string): void => {
    skipWhitespace();
    if (!positions.has(pointer)) positions.set(pointer, position(index));
    const char = text[index];
    if (char === '{') {
      index += 1;
      skipWhitespace();
      if (text[index] === '}') {
        index += 1;
        return;
      }
      while (index < text.length) {
        skipWhitespace();
        if (text[index] !== '"') throw new SyntaxError('expected a key');
        const keyAt = position(index);
        const key = readString();
        const child = `${pointer}/${escapeToken(key)}`;
        positions.set(child, keyAt);
        skipWhitespace();
        if (text[index] !== ':') throw new SyntaxError('expected ":"');
        index += 1;
        readMember(child);
        skipWhitespace();
        if (text[index] === ',') index += 1;
        else if (text[index] === '}') {
          index += 1;
          return;
        } else throw new SyntaxError('expected "," or "}"');
      }
    } else if (char === '[') {
      index += 1;
      skipWhitespace();
      if (text[index] === ']') {
        index += 1;
        return;
      }
      for (let item = 0; index < text.length; item++) {
        readValue(`${pointer}/${item}`);
        skipWhitespace();
        if (text[index] === ',') index += 1;
        else if (text[index] === ']') {
          index += 1;
          return;
        } else throw new SyntaxError('expected "," or "]"');
      }
    } else if (char === '"') {
      readString();
    } else {
      while (index < text.length && !/[\s,\]}]/.test(text[index] as string)) index += 1;
    }
  };
  // A member's value is parsed without overwriting the key position recorded for it.
  const readMember = (pointer: string): void => {
    const keyPosition = positions.get(pointer);
    positions.delete(pointer);
    readValue(pointer);
    if (keyPosition) positions.set(pointer, keyPosition);
  };

  try {
    readValue('');
  } catch {
    // Partial index: the caller reports the JSON syntax error separately.
  }
  return positions;
}

/** The position of `pointer` in `text`, or of its nearest located ancestor. */
export function locateJsonPointer(text: string, pointer: string): TextPosition | undefined {
  const positions = indexJsonPositions(text);
  let current = pointer;
  while (true) {
    const found = positions.get(current);
    if (found) return found;
    if (current === '') return undefined;
    current = current.slice(0, current.lastIndexOf('/'));
  }
}
