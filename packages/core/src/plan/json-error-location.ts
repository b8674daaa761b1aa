import { type Node, type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';
import { messageOf } from '../errors.js';

/** A 1-based position in a text. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

/** The first JSON syntax error in a text: where it is and what the parser expected there. */
export interface JsonSyntaxError extends TextPosition {
  /** 0-based offset into the text. */
  readonly offset: number;
  /** e.g. `comma expected`, `property name expected`. */
  readonly message: string;
}

// Strict JSON: what JSON.parse accepts, so a file that fails there gets a position here.
const STRICT = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false } as const;

/** Line and column (1-based) of a 0-based offset. */
export function positionAt(text: string, offset: number): TextPosition {
  let line = 1;
  let lineStart = 0;
  for (let index = text.indexOf('\n'); index !== -1 && index < offset; index = text.indexOf('\n', index + 1)) {
    line += 1;
    lineStart = index + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

function describeParseError(error: ParseError): string {
  // `CloseBraceExpected` → `close brace expected`
  return printParseErrorCode(error.error)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

/**
 * The first syntax error of a JSON text with its line and column, or `undefined` when the text
 * is valid JSON. V8's own messages carry no position on Node 20, so callers use this after a
 * failed `JSON.parse`.
 */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  const errors: ParseError[] = [];
  if (!parseWithin(() => parseTree(text, errors, STRICT))) return undefined;
  const first = errors[0];
  if (!first) return undefined;
  return { offset: first.offset, ...positionAt(text, first.offset), message: describeParseError(first) };
}

/** `JSON.parse` failed on `text`: a message with line, column and what was expected. */
export function describeJsonSyntaxError(text: string, error: unknown): JsonSyntaxError {
  const found = findJsonSyntaxError(text);
  if (found) return found;
  // The parsers disagree (a lone surrogate, say): keep V8's message at the start of the text.
  return { offset: 0, line: 1, column: 1, message: messageOf(error) };
}

/**
 * Runs a jsonc-parser walk, which recurses once per level: false when the text nests too deep for
 * the stack (thousands of levels), so callers do without positions instead of throwing a RangeError.
 */
function parseWithin(parse: () => void): boolean {
  try {
    parse();
    return true;
  } catch (error) {
    if (error instanceof RangeError) return false;
    throw error;
  }
}

function decodePointer(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * Locates JSON pointers in one parsed text (parsed once, looked up many times). An object
 * member is located at its key, so "unknown key" and "bad value" problems point at the line a
 * person would edit; a pointer that does not exist is located at its nearest existing ancestor.
 */
export function createJsonLocator(text: string): (pointer: string) => TextPosition | undefined {
  let root: Node | undefined;
  parseWithin(() => {
    root = parseTree(text, [], STRICT);
  });
  return (pointer) => {
    if (!root) return undefined;
    const segments = decodePointer(pointer);
    for (let length = segments.length; length >= 0; length--) {
      const node = nodeAt(root, segments.slice(0, length));
      if (node) return positionAt(text, node.parent?.type === 'property' ? node.parent.offset : node.offset);
    }
    return undefined;
  };
}

function nodeAt(root: Node, segments: readonly string[]): Node | undefined {
  let node: Node | undefined = root;
  for (const segment of segments) {
    if (node?.type === 'array') node = node.children?.[Number(segment)];
    else if (node?.type === 'object')
      node = node.children?.find((member) => member.children?.[0]?.value === segment)?.children?.[1];
    else return undefined;
  }
  return node;
}

/** The position of `pointer` in `text`, or of its nearest located ancestor. */
export function locateJsonPointer(text: string, pointer: string): TextPosition | undefined {
  return createJsonLocator(text)(pointer);
}
