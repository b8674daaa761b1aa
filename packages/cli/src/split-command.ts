import { UsageError } from './command-arguments.js';

/**
 * Splits a command line into an argv the way a POSIX shell splits words, without running one:
 * whitespace separates words, '…' keeps everything literally, "…" keeps whitespace (a backslash
 * escapes `"` and `\` inside), a backslash outside quotes escapes the next character. A JSON array
 * (`["npm", "test"]`) is taken as it is. Throws a usage error for an unterminated quote.
 */
export function splitCommand(text: string, option: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new UsageError(`${option}: not a JSON array of strings: ${trimmed}`);
    }
    if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string' && part !== '')) {
      throw new UsageError(`${option}: a JSON argv must be an array of non-empty strings`);
    }
    return parsed as string[];
  }
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let index = 0; index < trimmed.length; index++) {
    const char = trimmed[index] as string;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word = (word ?? '') + char;
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === '\\' && (trimmed[index + 1] === '"' || trimmed[index + 1] === '\\')) {
        word = (word ?? '') + trimmed[++index];
      } else word = (word ?? '') + char;
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === '"' || char === "'") {
      quote = char;
      word ??= '';
    } else if (char === '\\' && index + 1 < trimmed.length) {
      word = (word ?? '') + trimmed[++index];
    } else {
      word = (word ?? '') + char;
    }
  }
  if (quote) throw new UsageError(`${option}: unterminated ${quote} in ${JSON.stringify(text)}`);
  if (word !== undefined) words.push(word);
  return words;
}
