/**
 * Offset of the first JSON syntax error in `text` (or -1 if it parses). Node 20's JSON.parse
 * messages carry no position, so broken plans are re-scanned once to point at the error.
 */
export function jsonErrorOffset(text: string): number {
  let index = 0;
  const fail = (): never => {
    throw index;
  };
  const space = () => {
    while (index < text.length && ' \t\n\r'.includes(text[index] as string)) index++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, index)) index += word.length;
    else fail();
  };
  const string = () => {
    index++;
    while (index < text.length) {
      const char = text[index] as string;
      if (char === '"') {
        index++;
        return;
      }
      if (char === '\\') {
        index++;
        const escaped = text[index];
        if (escaped === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(index + 1, index + 5))) fail();
          index += 5;
        } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) index++;
        else fail();
        continue;
      }
      if (char < ' ') fail();
      index++;
    }
    fail();
  };
  const number = () => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(index, index + 400));
    if (!match || match[0] === '' || match[0] === '-') fail();
    index += (match as RegExpExecArray)[0].length;
  };
  const value = (): void => {
    space();
    const char = text[index];
    if (char === '{') {
      index++;
      space();
      if (text[index] === '}') {
        index++;
        return;
      }
      while (true) {
        space();
        if (text[index] !== '"') fail();
        string();
        space();
        if (text[index] !== ':') fail();
        index++;
        value();
        space();
        if (text[index] === ',') index++;
        else if (text[index] === '}') {
          index++;
          return;
        } else fail();
      }
    }
    if (char === '[') {
      index++;
      space();
      if (text[index] === ']') {
        index++;
        return;
      }
      while (true) {
        value();
        space();
        if (text[index] === ',') index++;
        else if (text[index] === ']') {
          index++;
          return;
        } else fail();
      }
    }
    if (char === '"') string();
    else if (char === 't') literal('true');
    else if (char === 'f') literal('false');
    else if (char === 'n') literal('null');
    else number();
  };
  try {
    value();
    space();
    return index < text.length ? index : -1;
  } catch (offset) {
    return typeof offset === 'number' ? offset : 0;
  }
}

/** `line L, column C` (1-based) of an offset. */
export function describeOffset(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${(before[before.length - 1]?.length ?? 0) + 1}`;
}
