import { describeJsonSyntaxError, ErrorCodes, StepwiseError } from '@stepwise/core';
import { type ParseErrorCode, printParseErrorCode, visit } from 'jsonc-parser';

/** A JSON file a person wrote, parsed. */
export interface ParsedJsonFile {
  /** The parsed value (not yet validated). */
  readonly value: unknown;
  /**
   * The file's text as strict JSON: comments and trailing commas blanked out, every other
   * character at its offset, so a position in it is the same position in the file.
   */
  readonly json: string;
}

interface Blanked {
  readonly json: string;
  /** The first JSONC syntax error, if any (before it, comments and trailing commas are blanked). */
  readonly error?: { readonly offset: number; readonly code: ParseErrorCode };
}

/** Spaces for every character of `text` but line breaks, so lines and columns stay put. */
function spaces(text: string): string {
  return text.replace(/[^\r\n]/g, ' ');
}

/**
 * Blanks what JSONC allows and JSON does not: comments, trailing commas (and a leading BOM).
 * Only what comes before the first JSONC syntax error is blanked, so `JSON.parse` then fails
 * exactly where the JSONC parser did.
 */
function blankJsoncExtras(original: string): Blanked {
  // A byte order mark (editors on Windows write one) is not JSON either.
  const text = original.startsWith('\uFEFF') ? ` ${original.slice(1)}` : original;
  const spans: { offset: number; length: number }[] = [];
  let error: Blanked['error'];
  // A comma not yet followed by a member or an element: trailing if the container ends next.
  let pendingComma: number | undefined;
  const valueStarts = () => {
    pendingComma = undefined;
  };
  const containerEnds = () => {
    if (pendingComma !== undefined) spans.push({ offset: pendingComma, length: 1 });
    pendingComma = undefined;
  };
  visit(
    text,
    {
      onComment: (offset, length) => spans.push({ offset, length }),
      onSeparator: (character, offset) => {
        if (character === ',') pendingComma = offset;
      },
      onObjectBegin: valueStarts,
      onArrayBegin: valueStarts,
      onObjectProperty: valueStarts,
      onLiteralValue: valueStarts,
      onObjectEnd: containerEnds,
      onArrayEnd: containerEnds,
      onError: (code, offset) => {
        error ??= { offset, code };
      },
    },
    { disallowComments: false, allowTrailingComma: true, allowEmptyContent: false },
  );
  // A trailing comma is found after the comments that follow it: put the spans in text order.
  spans.sort((a, b) => a.offset - b.offset);
  const parts: string[] = [];
  let copied = 0;
  for (const span of spans) {
    if (error && span.offset >= error.offset) break;
    const end = span.offset + span.length;
    parts.push(text.slice(copied, span.offset), spaces(text.slice(span.offset, end)));
    copied = end;
  }
  parts.push(text.slice(copied));
  const json = parts.join('');
  return error ? { json, error } : { json };
}

/**
 * The JSONC parser recurses once per level: a text nested thousands of levels deep overflows the
 * stack. Such a text is read as strict JSON (`JSON.parse` does not recurse), so a deep plan gets
 * its typed "too deep" problem from validation instead of a RangeError here.
 */
function blankJsoncExtrasWithin(text: string): Blanked {
  try {
    return blankJsoncExtras(text);
  } catch (error) {
    if (error instanceof RangeError) return { json: text };
    throw error;
  }
}

/**
 * Parses the text of a JSON file a person wrote (a plan, a configuration) as JSONC: `//` and
 * `/* *\/` comments and trailing commas are allowed; everything else is read by `JSON.parse`, with
 * its meaning (an own `__proto__` key stays a key). Broken text throws E004 located at
 * `file:line:column`, naming what the parser expected there.
 */
export function parseJsonFile(text: string, file: string): ParsedJsonFile {
  const { json, error } = blankJsoncExtrasWithin(text);
  try {
    return { value: JSON.parse(json), json };
  } catch (thrown) {
    const syntax = describeJsonSyntaxError(json, thrown);
    // Strict JSON calls an unclosed comment an invalid comment; in JSONC the comment is fine, its end is missing.
    const unclosed =
      error !== undefined &&
      error.offset === syntax.offset &&
      printParseErrorCode(error.code) === 'UnexpectedEndOfComment';
    const where = `${file}:${syntax.line}:${syntax.column}`;
    throw new StepwiseError(
      ErrorCodes.INPUT_INVALID,
      `${where} is not valid JSON: ${unclosed ? 'comment not closed (*/ expected)' : syntax.message}`,
      { location: where, details: { file, line: syntax.line, column: syntax.column } },
    );
  }
}
