import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_NESTING_DEPTH } from './nesting-depth.js';
import { MAX_PLAIN_VALUES, plainJson, TooDeepForJson } from './plain-json.js';

/** The reference: what printing and parsing gives. */
const throughJson = (value: unknown): unknown => {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : JSON.parse(text);
};

/** Equal as JSON.parse's output is equal: same own keys in the same order, -0 and 0 apart. */
function expectSameAsJson(value: unknown): void {
  const expected = throughJson(value);
  const actual = plainJson(value);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
  // Not toStrictEqual: it compares `constructor` members, which a generated `{ constructor: {} }` has.
  expect(isDeepStrictEqual(actual, expected)).toBe(true);
}

describe('plainJson', () => {
  it('gives what JSON.parse(JSON.stringify(value)) gives, for any JSON-like value', () => {
    const leaf = fc.oneof(
      fc.string(),
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.constant(-0),
      fc.date({ noInvalidDate: false }),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
      array: fc.array(tie('node'), { maxLength: 5 }),
      object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'toJSON', 'constructor')), tie('node'), {
        maxKeys: 5,
      }),
    })).node;
    fc.assert(
      fc.property(value, (generated) => {
        // A generated `toJSON` member holds data, not a function: JSON.stringify reads it as a member.
        expectSameAsJson(generated);
      }),
      { numRuns: 2_000 },
    );
  });

  it('follows JSON.stringify on the values that are not plain data', () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
      get sum() {
        return this.x + this.y;
      }
    }
    const withKey = {
      member: { toJSON: (key: string) => `called for ${key}` },
      list: [{ toJSON: (key: string) => key }],
    };
    const sparse: unknown[] = [1];
    sparse[4] = 2;
    for (const value of [
      new Date('2026-01-02T03:04:05.000Z'),
      { when: new Date(Number.NaN) },
      new Map([['k', 1]]),
      new Set([1]),
      new Uint8Array([1, 2]),
      Buffer.from('hi'),
      new Point(1, 2),
      [new String('boxed'), new Number(3), new Boolean(false)],
      withKey,
      sparse,
      { fn() {}, [Symbol('s')]: 1, sym: Symbol('s'), nan: Number.NaN, inf: -Infinity, zero: -0 },
      Object.create(null, { visible: { value: 1, enumerable: true }, hidden: { value: 2, enumerable: false } }),
      JSON.parse('{"__proto__": {"polluted": true}}'),
      new Proxy({ a: 1 }, {}),
      Number.NaN,
      'text',
      undefined,
      () => 1,
    ]) {
      expectSameAsJson(value);
    }
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('reads each getter and toJSON once, and shares strings', () => {
    let reads = 0;
    const text = 'x'.repeat(100_000);
    const value = {
      get counted() {
        reads++;
        return reads;
      },
      text,
    };
    expect(plainJson(value)).toEqual({ counted: 1, text });
    expect(reads).toBe(1);
  });

  it('throws what JSON.stringify throws for a BigInt and a throwing toJSON', () => {
    expect(() => plainJson({ id: 1n })).toThrow(TypeError);
    expect(() => plainJson([1n])).toThrow(/BigInt/);
    expect(() =>
      plainJson({
        toJSON() {
          throw new Error('refused');
        },
      }),
    ).toThrow('refused');
  });

  it('refuses a value nested deeper than MAX_NESTING_DEPTH, and one that contains itself, without overflowing', () => {
    let deep: unknown = 'leaf';
    for (let level = 0; level < MAX_NESTING_DEPTH; level++) deep = [deep];
    expect(() => plainJson(deep)).not.toThrow();
    expect(() => plainJson([deep])).toThrow(TooDeepForJson);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => plainJson(cycle)).toThrow(TooDeepForJson);
    let veryDeep: unknown = {};
    for (let level = 0; level < 100_000; level++) veryDeep = { next: veryDeep };
    expect(() => plainJson(veryDeep)).toThrow(TooDeepForJson);
  });

  it(`refuses more than ${MAX_PLAIN_VALUES} values before walking them (a sparse array 2^32 - 1 long)`, () => {
    const sparse: unknown[] = [];
    sparse.length = 2 ** 32 - 1;
    const started = performance.now();
    expect(() => plainJson({ sparse })).toThrow(RangeError);
    expect(() => plainJson({ sparse })).not.toThrow(TooDeepForJson);
    // Refused from its length alone: no walk of four billion holes.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(() => plainJson(Array.from({ length: 1_000 }, () => new Array(MAX_PLAIN_VALUES / 1_000)))).toThrow(
      /more than 10,000,000 values/,
    );
  });
});
