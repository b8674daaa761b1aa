/**
 * Object key shapes for canonical JSON: each shape's keys sorted and quoted once (see `keyShapeOf`).
 */

/** Object keys as JSON strings, kept: plans and journal events repeat a few dozen keys endlessly. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_MAX = 10_000;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(key, quoted);
  }
  return quoted;
}

/** An object's keys in their own order, then sorted, each sorted key quoted with its colon. */
export interface KeyShape {
  readonly keys: readonly string[];
  readonly sorted: readonly string[];
  readonly members: readonly string[];
  /** How canonical JSON appends an object of this shape: see `appendedFormOf`. */
  appended: AppendedForm | undefined;
  /**
   * A copy made by setting the keys in sorted order keeps that order: no key is an array index
   * (objects list those first, in numeric order) or `__proto__` (setting it sets the prototype).
   */
  readonly copyable: boolean;
}

/**
 * For a small object (a journal event, a step), which canonical JSON writes by appending: each
 * sorted key as it opens the object (`{"key":`) and as it follows a member (`,"key":`), both also
 * with a string value's opening quote (`{"key":"`, `,"key":"`).
 */
export interface AppendedForm {
  readonly opening: readonly string[];
  readonly following: readonly string[];
  readonly openingQuote: readonly string[];
  readonly followingQuote: readonly string[];
}

/**
 * The shape's appended form, made on first use and kept with the shape: only objects written by
 * appending need it, and a shape met once (an output's own keys, beyond the shapes kept) would
 * otherwise pay for four arrays it never reads.
 */
export function appendedFormOf(shape: KeyShape): AppendedForm {
  let form = shape.appended;
  if (form === undefined) {
    const { members } = shape;
    form = {
      opening: members.map((member) => `{${member}`),
      following: members.map((member) => `,${member}`),
      openingQuote: members.map((member) => `{${member}"`),
      followingQuote: members.map((member) => `,${member}"`),
    };
    shape.appended = form;
  }
  return form;
}

/**
 * Shapes seen, by first key: journal events and plan steps come in a few dozen shapes, so sorting
 * and quoting their keys once saves most of an object's cost. Bounded: objects with keys of their
 * own (a tool's output) stop adding shapes and pay the sort.
 */
const keyShapes = new Map<string, KeyShape[]>();
const KEY_SHAPES_MAX = 1_000;
const SHAPES_PER_FIRST_KEY_MAX = 16;
let keyShapeCount = 0;

function sameKeys(left: readonly string[], right: readonly string[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) if (left[index] !== right[index]) return false;
  return true;
}

const INTEGER_KEY = /^(?:0|[1-9][0-9]*)$/;

export function keyShapeOf(keys: string[]): KeyShape {
  const first = keys.length === 0 ? '' : (keys[0] as string);
  const shapes = keyShapes.get(first);
  // An indexed loop: `for…of` here allocated an iterator per call (about 50 bytes a journal event).
  if (shapes !== undefined) {
    for (let index = 0; index < shapes.length; index++) {
      const shape = shapes[index] as KeyShape;
      if (sameKeys(shape.keys, keys)) return shape;
    }
  }
  // Own enumerable string keys, as JSON.stringify takes them, in plain string (UTF-16) order:
  // integer-like keys ("0", "12") too, which JavaScript itself enumerates first.
  const sorted = keys.length > 1 ? [...keys].sort() : keys;
  const members = sorted.map((key) => `${quoteKey(key)}:`);
  const shape: KeyShape = {
    keys,
    sorted,
    members,
    appended: undefined,
    copyable: !keys.some((key) => key === '__proto__' || INTEGER_KEY.test(key)),
  };
  if (keyShapeCount < KEY_SHAPES_MAX && (shapes === undefined || shapes.length < SHAPES_PER_FIRST_KEY_MAX)) {
    keyShapeCount++;
    if (shapes === undefined) keyShapes.set(first, [shape]);
    else shapes.push(shape);
  }
  return shape;
}
