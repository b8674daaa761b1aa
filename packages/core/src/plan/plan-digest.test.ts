import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, type StepwiseError } from '../errors.js';
import { randomJournals } from '../testing/random-journal.js';
import { seededDraw } from '../testing/random-values.js';
import {
  approvePlan,
  canonicalJson,
  deriveExecutionId,
  deriveRunId,
  planDigest,
  verifyAuthorization,
} from './plan-digest.js';
import type { Plan } from './plan-schema.js';

const plan: Plan = {
  id: 'plan_001',
  version: 1,
  goal: 'Bump the version',
  steps: [{ id: 'read', tool: 'file_read', args: { path: 'package.json', options: { a: 1, b: [1, 2] } } }],
};

function shuffleKeys(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(item, random));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).sort(() => random() - 0.5);
    return Object.fromEntries(entries.map(([key, item]) => [key, shuffleKeys(item, random)]));
  }
  return value;
}

/** The original, hand-built canonical form: canonicalJson must match it exactly. */
function referenceCanonical(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : referenceCanonical(item))).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${referenceCanonical((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

describe('planDigest', () => {
  it('canonical JSON equals the reference form for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => canonicalJson(value) === referenceCanonical(value)),
      { numRuns: 500 },
    );
    expect(canonicalJson({ b: undefined, a: [undefined, 1] })).toBe('{"a":[null,1]}');
  });

  it('gives a value and its JSON round trip the same text (what a store gives back is what was hashed)', () => {
    const values = [
      { at: new Date(Date.UTC(2030, 0, 1)), boxed: [new String('text'), new Number(2), new Boolean(false)] },
      { bytes: new Uint8Array([3, 1, 2, 0, 9, 8, 7, 6, 5, 4, 11]), map: new Map([[1, 2]]), nan: Number.NaN, zero: -0 },
      { custom: { toJSON: (key: string) => ({ key, z: 1, a: 2 }) }, skipped: () => 1, symbol: Symbol('s') },
      [undefined, () => 1, { toJSON: () => undefined }],
    ];
    for (const value of values) expect(canonicalJson(value)).toBe(canonicalJson(JSON.parse(JSON.stringify(value))));
    expect(canonicalJson(values[0])).toBe('{"at":"2030-01-01T00:00:00.000Z","boxed":["text",2,false]}');
    expect(() => canonicalJson({ big: 1n })).toThrow(TypeError);
  });

  it('canonical JSON of every event of random journals equals the reference form, computed twice', () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const events = randomJournals(seededDraw(seed), { maxMoves: 60 }).flatMap((journal) => journal.events);
        // Twice: the second pass takes every object's key order from what the first one learned.
        for (let pass = 0; pass < 2; pass++) {
          for (const event of events) expect(canonicalJson(event)).toBe(referenceCanonical(event));
        }
      }),
      { numRuns: 100 },
    );
  });

  it('escapes every string as JSON.stringify does: quotes, backslashes, controls, lone surrogates', () => {
    // UTF-16 code units, lone surrogates included, and the characters JSON escapes often.
    const unit = fc.oneof(
      fc.nat(0xffff).map((code) => String.fromCharCode(code)),
      fc.constantFrom('"', '\\', '\n', '\u0000', '\ud800', '\udfff', 'a'),
    );
    const text = fc.string({ unit, maxLength: 12 });
    fc.assert(
      fc.property(fc.dictionary(text, text), text, (record, alone) => {
        expect(canonicalJson(record)).toBe(referenceCanonical(record));
        expect(canonicalJson(alone)).toBe(JSON.stringify(alone));
      }),
      { numRuns: 500 },
    );
    for (const alone of ['a"b', 'a\\b', '\u0000\u001f', '\ud800x', 'x\udfff', '\ud83d\ude00', '\u2028\u007f']) {
      expect(canonicalJson(alone)).toBe(JSON.stringify(alone));
    }
    expect(canonicalJson('\udfff')).toBe('"\\udfff"');
  });

  it('sorts objects that share a first key but not the rest, and objects with more shapes than it keeps', () => {
    const shapes = Array.from({ length: 40 }, (_, index) => ({ type: 'x', [`k${40 - index}`]: index, a: index }));
    for (let pass = 0; pass < 2; pass++) {
      for (const value of shapes) expect(canonicalJson(value)).toBe(referenceCanonical(value));
    }
    expect(canonicalJson({ type: 1, b: 2, a: 3 })).toBe('{"a":3,"b":2,"type":1}');
    expect(canonicalJson({ type: 1, a: 3, b: 2 })).toBe('{"a":3,"b":2,"type":1}');
    expect(canonicalJson({ type: 1, b: undefined, a: 3 })).toBe('{"a":3,"type":1}');
    const many = Array.from({ length: 1_500 }, (_, index) => ({ [`key${index}`]: index, z: 0, a: 1 }));
    expect(canonicalJson(many)).toBe(referenceCanonical(many));
    // Large objects and arrays (joined, not appended), with members JSON leaves out.
    const wide = Object.fromEntries(
      Array.from({ length: 30 }, (_, index) => [`w${29 - index}`, index % 3 ? index : undefined]),
    );
    const long = Array.from({ length: 30 }, (_, index) => ({
      b: index % 2 ? undefined : index,
      a: { d: undefined, c: [index] },
    }));
    expect(canonicalJson({ wide, long })).toBe(referenceCanonical(JSON.parse(JSON.stringify({ wide, long }))));
    expect(canonicalJson(long[1])).toBe('{"a":{"c":[1]}}');
  });

  // RFC 8785 (JSON Canonicalization Scheme), sections 3.2.2 and 3.2.3: numbers as ECMAScript
  // prints them, strings escaped only where JSON must, keys sorted by UTF-16 code units.
  it.each([
    [
      'numbers, strings and literals',
      String.raw`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    ],
    [
      'key order by UTF-16 code units',
      String.raw`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`,
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    ],
    [
      'integer-like keys as strings, not numbers',
      '{"10": 1, "2": 2, "1": {"b": -0, "a": 1e21}}',
      '{"1":{"a":1e+21,"b":0},"10":1,"2":2}',
    ],
  ])('canonical JSON is RFC 8785 for JSON input: %s', (_name, input, expected) => {
    expect(canonicalJson(JSON.parse(input))).toBe(expected);
  });

  it('writes every number as JSON.stringify does, the small integers it keeps and the rest', () => {
    const numbers = [0, -0, 1, 1023, 1024, -1, 0.1, 2 ** 53, 1e21, 5e-324, -1e-7, NaN, Infinity, -Infinity];
    fc.assert(fc.property(fc.array(fc.double()), (more) => canonicalJson(more) === JSON.stringify(more)));
    // Twice: the second time through the kept texts.
    for (let round = 0; round < 2; round++) {
      for (const value of numbers) expect(canonicalJson({ value })).toBe(JSON.stringify({ value }));
    }
    expect(canonicalJson([-0, NaN, 1e21, 7])).toBe('[0,null,1e+21,7]');
  });

  it('writes arrays and objects of 1,024 members or more (a sorted copy, natively) as it writes small ones', () => {
    // Each member through the writer on its own (a one-member array), then joined.
    const memberwise = (items: unknown[]) => `[${items.map((item) => canonicalJson([item]).slice(1, -1)).join(',')}]`;
    // Keys a copy can keep in order (an integer-like key anywhere makes the whole value written by
    // hand, as below), so that the copy is what is tested.
    const key = fc.string().filter((text) => text !== '__proto__' && !/^(?:0|[1-9][0-9]*)$/.test(text));
    const member = fc.oneof(fc.object({ key, maxDepth: 2 }), fc.jsonValue({ maxDepth: 0 }));
    fc.assert(
      fc.property(fc.array(member, { minLength: 1024, maxLength: 1100 }), (items) => {
        const text = canonicalJson(items);
        return text === referenceCanonical(items) && text === memberwise(items);
      }),
      { numRuns: 20 },
    );
    class Point {
      constructor(
        readonly y: number,
        readonly x: number,
      ) {}
    }
    // Members the copy takes: dropped ones, holes, a class instance's own keys, a Map's none, a
    // function with a toJSON of its own (dropped, as the writer drops every function).
    const copied = [
      { b: 'b', a: 1, c: undefined, d: () => 1, e: Symbol('s') },
      Object.assign(new Array(5), { 0: undefined, 1: () => 1, 2: Symbol('s'), 4: 3 }),
      { f: Object.assign(() => 1, { toJSON: () => 'not this' }), g: [Object.assign(() => 1, { toJSON: () => 2 })] },
      new Point(2, 1),
      new Map([[1, 2]]),
      // Not a boxed number of this realm: an object with no keys, as the writer sees it.
      runInNewContext('new Number(5)'),
      Object.setPrototypeOf(new Boolean(true), null),
      { toJSON: 'not a function', a: 1 },
      -0,
      NaN,
      'line\nbreak \ud800',
    ];
    const items = Array.from({ length: 1100 }, (_, index) => copied[index % copied.length]);
    expect(canonicalJson(items)).toBe(memberwise(items));
    const start =
      '[{"a":1,"b":"b"},[null,null,null,null,3],{"g":[null]},{"x":1,"y":2},{},{},{},{"a":1,"toJSON":"not a function"},0,null,';
    expect(canonicalJson(items).slice(0, start.length)).toBe(start);
    const wide = Object.fromEntries(
      Array.from({ length: 1500 }, (_, index) => [`k${1500 - index}`, copied[index % copied.length]]),
    );
    // Each member through the writer in a one-key object, dropped members left out.
    const membersOf = (value: Record<string, unknown>) =>
      Object.keys(value)
        .sort()
        .map((key) => canonicalJson({ [key]: value[key] }).slice(1, -1))
        .filter((member) => member !== '');
    expect(canonicalJson(wide)).toBe(`{${membersOf(wide).join(',')}}`);
    // Members the copy leaves to the writer (the whole array is then written by hand): keys a copy
    // cannot keep in order, and what the native JSON.stringify would write otherwise (a toJSON,
    // which the writer applies again to its result; a boxed primitive, unboxed by valueOf).
    const byHand = [
      { 10: 'ten', 2: 'two', b: 'b' },
      JSON.parse('{"__proto__": {"x": 1}, "a": 1}'),
      new Date(0),
      { toJSON: () => ({ z: 'z', at: new Date(0), a: [new Number(1)] }) },
      Object.assign(new String('boxed'), { toString: () => 'not this' }),
      Object.assign(new Number(1), { valueOf: () => ({ b: 1, a: 2 }) }),
      Object(1n),
    ];
    for (const member of byHand) {
      const mixed = [...items, member];
      expect(canonicalJson(mixed)).toBe(memberwise(mixed));
    }
    const end =
      '{"10":"ten","2":"two","b":"b"},{"__proto__":{"x":1},"a":1},"1970-01-01T00:00:00.000Z",{"a":[1],"at":"1970-01-01T00:00:00.000Z","z":"z"},"boxed",{"a":2,"b":1},{}]';
    expect(canonicalJson([...items, ...byHand]).slice(-end.length)).toBe(end);
    // A toJSON is called once, with the member's key (an index in an array); a getter is read once
    // where nothing stops the copy.
    let calls = 0;
    let reads = 0;
    const counted = Array.from({ length: 1100 }, (_, index) =>
      index === 700
        ? { toJSON: (key: string) => ({ key, call: ++calls }) }
        : {
            get value() {
              return ++reads;
            },
          },
    );
    expect(canonicalJson(counted)).toContain('{"call":1,"key":"700"}');
    // The copy stops at the toJSON before calling it, and the writer reads every member again: the
    // 700 getters before it ran twice (sortedCopy says so; plans and events have no getters).
    expect([calls, reads]).toEqual([1, 1099 + 700]);
    reads = 0;
    canonicalJson(counted.filter((_, index) => index !== 700));
    expect(reads).toBe(1099);
    // A BigInt throws, unless BigInt.prototype has a toJSON (a common polyfill), which is applied.
    const big = Array.from({ length: 1100 }, (_, index) => (index === 700 ? { id: 12n } : index));
    expect(() => canonicalJson(big)).toThrow(new TypeError('canonicalJson: a BigInt is not JSON'));
    const prototype = BigInt.prototype as { toJSON?: () => string };
    prototype.toJSON = function (this: bigint) {
      return this.toString();
    };
    try {
      expect(canonicalJson(big)).toContain('699,{"id":"12"},701');
    } finally {
      delete prototype.toJSON;
    }
  });

  it("reads a small object's members one at a time, in sorted order, as each is written", () => {
    // What a getter or a toJSON does to the members after it is seen, as JSON.stringify would see it.
    const removing = () => {
      const value: Record<string, unknown> = {
        get a() {
          delete value.b;
          return 'A';
        },
        b: 'B',
        c: 'C',
        z: { n: 1 },
      };
      return value;
    };
    expect(canonicalJson(removing())).toBe('{"a":"A","c":"C","z":{"n":1}}');
    // A member made enumerable meanwhile was not among the keys: never written, nor shifted onto another.
    const revealing: Record<string, unknown> = {
      get a() {
        delete revealing.b;
        Object.defineProperty(revealing, 'x', { enumerable: true });
        return 'A';
      },
      b: 'B',
    };
    Object.defineProperty(revealing, 'x', { value: 'hidden', enumerable: false, configurable: true });
    expect(canonicalJson(revealing)).toBe('{"a":"A"}');
    const adding: Record<string, unknown> = {
      m: 1,
      get b() {
        adding.a = 'late';
        return 2;
      },
    };
    expect(canonicalJson(adding)).toBe('{"b":2,"m":1}');
    // Sorted order, not the object's own: `a` is read (and its getter run) before `b`.
    let reads = 0;
    const counting = {
      get b() {
        return ++reads;
      },
      get a() {
        return ++reads;
      },
    };
    expect(canonicalJson(counting)).toBe('{"a":1,"b":2}');
    const changing: Record<string, unknown> = {
      get b() {
        changing.a = 'X';
        return 1;
      },
      a: 'A',
    };
    expect(canonicalJson(changing)).toBe('{"a":"A","b":1}');
    // A toJSON that changes a later member: the member is read after it ran.
    const later: Record<string, unknown> = {
      a: {
        toJSON: () => {
          later.b = 'X';
          return 1;
        },
      },
      b: 'B',
    };
    expect(canonicalJson(later)).toBe('{"a":1,"b":"X"}');
    // A proxy whose keys come back in another order each time: each key is read by name.
    let calls = 0;
    const shuffling = new Proxy(
      { a: 'A', b: 'B' },
      { ownKeys: (target) => (calls++ % 2 === 0 ? Reflect.ownKeys(target) : Reflect.ownKeys(target).reverse()) },
    );
    expect(canonicalJson(shuffling)).toBe('{"a":"A","b":"B"}');
    // Members in every position, dropped ones among them, strings that need escaping or not.
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ maxLength: 4 }),
          fc.oneof(
            fc.string(),
            fc.constant(undefined),
            fc.integer(),
            fc.constant(() => 1),
            fc.boolean(),
          ),
          { maxKeys: 16 },
        ),
        (value) => {
          expect(canonicalJson(value)).toBe(referenceCanonical(JSON.parse(JSON.stringify(value))));
        },
      ),
    );
  });

  it('approvePlan refuses something that is not a plan, or no approver, with a typed error', () => {
    expect(() => approvePlan(null as never, { by: 'x' })).toThrow(expect.objectContaining({ code: 'E001' }));
    expect(() => approvePlan(5 as never, { by: 'x' })).toThrow(expect.objectContaining({ code: 'E001' }));
    expect(() => approvePlan({ id: 'p', steps: [] } as never, { by: '' })).toThrow(
      expect.objectContaining({ code: 'E002' }),
    );
  });

  it('keeps an own "__proto__" member: two plans differing only there have different digests', () => {
    const withProto = JSON.parse('[{"b":1,"__proto__":{"x":1}}]');
    expect(canonicalJson(withProto)).toBe('[{"__proto__":{"x":1},"b":1}]');
    expect(canonicalJson(withProto)).not.toBe(canonicalJson([{ b: 1 }]));
  });

  it('does not depend on key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer(), (value, seed) => {
        let state = seed;
        const random = () => {
          state = (state * 1103515245 + 12345) % 2 ** 31;
          return state / 2 ** 31;
        };
        return canonicalJson(value) === canonicalJson(shuffleKeys(value, random));
      }),
    );
    const reordered = { steps: plan.steps, goal: plan.goal, version: 1, id: plan.id } as Plan;
    expect(planDigest(reordered)).toBe(planDigest(plan));
    expect(planDigest(plan)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes when any value changes', () => {
    const variants: Plan[] = [
      { ...plan, goal: 'Bump the version!' },
      { ...plan, version: 2 },
      { ...plan, steps: [{ ...plan.steps[0], args: { path: 'package.json ' } } as Plan['steps'][0]] },
      { ...plan, steps: [{ ...plan.steps[0], requiresApproval: true } as Plan['steps'][0]] },
      {
        ...plan,
        steps: [{ ...plan.steps[0], args: { path: 'package.json', options: { a: 1, b: [2, 1] } } } as Plan['steps'][0]],
      },
    ];
    const digests = new Set([plan, ...variants].map(planDigest));
    expect(digests.size).toBe(variants.length + 1);
  });
});

describe('approvePlan / verifyAuthorization', () => {
  it('accepts the approved plan and rejects missing, foreign and edited ones', () => {
    const authorization = approvePlan(plan, { by: 'alice' });
    expect(authorization).toMatchObject({ planId: 'plan_001', planDigest: planDigest(plan), by: 'alice' });
    expect(() => verifyAuthorization(plan, authorization)).not.toThrow();
    expect(() => verifyAuthorization(plan, undefined)).toThrowError(
      expect.objectContaining({ code: ErrorCodes.NOT_AUTHORIZED }),
    );
    expect(() => verifyAuthorization(plan, { ...authorization, by: '' })).toThrowError(
      expect.objectContaining({ code: ErrorCodes.NOT_AUTHORIZED }),
    );
    expect(() => verifyAuthorization({ ...plan, id: 'other' }, authorization)).toThrowError(
      expect.objectContaining({ code: ErrorCodes.PLAN_MISMATCH, location: '/authorization/planId' }),
    );
    expect(() => verifyAuthorization({ ...plan, goal: 'sneaky' }, authorization)).toThrowError(
      expect.objectContaining({ code: ErrorCodes.PLAN_MISMATCH, location: '/authorization/planDigest' }),
    );
  });

  it('names both digests on a mismatch, and takes a digest the caller already computed', () => {
    const authorization = approvePlan(plan, { by: 'alice' });
    const edited = { ...plan, goal: 'sneaky' };
    let thrown: unknown;
    try {
      verifyAuthorization(edited, authorization);
    } catch (error) {
      thrown = error;
    }
    expect((thrown as StepwiseError).details).toEqual({
      expected: authorization.planDigest,
      actual: planDigest(edited),
    });
    // The caller's digest is the one compared (and reported): the plan is not hashed again.
    expect(() => verifyAuthorization(edited, authorization, authorization.planDigest)).not.toThrow();
    expect(() => verifyAuthorization(plan, authorization, 'f'.repeat(64))).toThrowError(
      expect.objectContaining({ details: { expected: authorization.planDigest, actual: 'f'.repeat(64) } }),
    );
    // No authorization is refused before the plan is hashed: a plan too deep to hash still gets E002.
    let deep: Record<string, unknown> = {};
    const tooDeep = { ...plan, steps: [{ id: 's', tool: 't', args: deep }] };
    for (let level = 0; level < 20_000; level++) deep = deep.next = {} as Record<string, unknown>;
    expect(() => verifyAuthorization(tooDeep as typeof plan, undefined)).toThrowError(
      expect.objectContaining({ code: ErrorCodes.NOT_AUTHORIZED }),
    );
  });

  it('derives stable ids: one authorization, one run; attempts differ', () => {
    const first = approvePlan(plan, { by: 'alice' });
    const second = approvePlan(plan, { by: 'alice' });
    expect(first.id).not.toBe(second.id);
    expect(deriveRunId(first)).toBe(deriveRunId({ ...first }));
    expect(deriveRunId(first)).not.toBe(deriveRunId(second));
    const runId = deriveRunId(first);
    expect(deriveExecutionId(runId, 'a', 1)).toBe(deriveExecutionId(runId, 'a', 1));
    expect(
      new Set([deriveExecutionId(runId, 'a', 1), deriveExecutionId(runId, 'a', 2), deriveExecutionId(runId, 'b', 1)])
        .size,
    ).toBe(3);
  });
});
