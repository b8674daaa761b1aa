import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PlanSchema } from './plan-schema.js';
import { isPlainValidPlan } from './plan-shape-check.js';
import { validatePlan } from './validate-plan.js';

/** `['b', <hole>, 'c']`: the schema reads the hole as `undefined`. */
const holed = (): string[] => Object.assign(new Array<string>(3), { 0: 'b', 2: 'c' });

/** Values each field may take: right types, wrong types, edges of the schema's bounds. */
const loose = fc.oneof(
  fc.anything(),
  fc.constantFrom(undefined, null, '', 'x'.repeat(201), 'bad id', 0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY),
  fc.constantFrom(2 ** 53, true, [], {}, Object.create(null), new Date(0), holed()),
);
const stepId = fc.oneof(fc.constantFrom('a', 'b', 'c', 'd.e', 'f:g-h_1'), fc.string({ maxLength: 4 }));
const stringList = fc.oneof(fc.array(stepId, { maxLength: 3 }), loose);
const record = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  loose,
);
const positive = fc.oneof(fc.integer({ min: -2, max: 5 }), loose);
const retry = fc.oneof(
  fc.record(
    {
      maxAttempts: fc.integer({ min: 0, max: 101 }),
      factor: fc.double({ min: 0, max: 3 }),
      on: fc.array(fc.constantFrom('E304', 'X1'), { maxLength: 2 }),
    },
    { requiredKeys: ['maxAttempts'] },
  ),
  loose,
);
const conditions = fc.oneof(
  fc.array(fc.record({ kind: fc.string({ maxLength: 2 }), path: fc.string() }), { maxLength: 2 }),
  loose,
);

const step = fc.oneof(
  fc.record(
    {
      id: fc.oneof(stepId, loose),
      tool: fc.oneof(fc.constantFrom('echo', ''), loose),
      args: record,
      description: fc.oneof(fc.string(), loose),
      dependsOn: stringList,
      requiresApproval: fc.oneof(fc.boolean(), loose),
      critical: fc.boolean(),
      retry,
      timeoutMs: positive,
      preconditions: conditions,
      expect: conditions,
      tools: stringList,
      maxTurns: positive,
      metadata: record,
      extra: loose,
    },
    { requiredKeys: [] },
  ),
  loose,
);

const plan = fc.record(
  {
    $schema: fc.oneof(fc.string(), loose),
    id: fc.oneof(fc.constantFrom('p', 'plan-1'), loose),
    version: positive,
    goal: fc.string(),
    intent: fc.oneof(fc.string(), loose),
    steps: fc.oneof(fc.array(step, { maxLength: 4 }), loose),
    metadata: record,
    revision: positive,
    parentDigest: fc.oneof(fc.constantFrom('a'.repeat(64), 'A'.repeat(64), 'a'.repeat(63)), loose),
    unknown: loose,
  },
  { requiredKeys: [] },
);

/** A plan as JSON gives it: JSON.parse makes an own `__proto__` key where the text has one. */
const fromJson = fc.constantFrom(
  '{"id":"p","steps":[{"id":"a","tool":"echo","args":{"__proto__":{"x":1}}}]}',
  '{"id":"p","steps":[{"id":"a","tool":"echo","metadata":{"__proto__":1}}]}',
  '{"id":"p","__proto__":{"steps":[]},"steps":[{"id":"a"}]}',
  '{"id":"p","steps":[{"id":"a","tool":"echo","args":{"text":"hi"},"dependsOn":[]}]}',
);

describe('isPlainValidPlan', () => {
  it('accepts only what the schema accepts, and only where the schema would return an equal plan', () => {
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          plan,
          fromJson.map((text) => JSON.parse(text)),
        ),
        (input) => {
          if (!isPlainValidPlan(input)) return;
          accepted++;
          const parsed = PlanSchema.safeParse(input);
          expect(parsed.success).toBe(true);
          expect(parsed.data).toStrictEqual(input);
        },
      ),
      { numRuns: 4000 },
    );
    // The property says nothing if the check never says yes.
    expect(accepted).toBeGreaterThan(20);
  });

  it('takes the fast path for plain plans, with every field the schema knows', () => {
    const full = {
      $schema: 'https://example.invalid/plan.json',
      id: 'release',
      version: 2,
      goal: 'ship',
      intent: 'ship it',
      metadata: { owner: 'ops', nested: { list: [1, 2] } },
      revision: 1,
      parentDigest: 'f'.repeat(64),
      steps: [
        { id: 'build', tool: 'sh', args: { command: 'make' }, timeoutMs: 60_000, critical: true },
        {
          id: 'test.unit',
          tool: 'sh',
          args: { command: 'make test', input: { $ref: 'build', pointer: '/stdout' } },
          dependsOn: ['build'],
          retry: { maxAttempts: 3, initialDelayMs: 10, factor: 2, maxDelayMs: 100, jitter: 0.5, on: ['E304'] },
          preconditions: [{ kind: 'file-exists', path: 'Makefile', custom: true }],
          expect: [{ kind: 'exit-code', description: 'passes' }],
          requiresApproval: false,
          description: 'unit tests',
          metadata: { team: 'core' },
        },
        { id: 'agent', tools: ['read', 'write'], maxTurns: 4, dependsOn: ['test.unit', 'build'] },
      ],
    };
    expect(isPlainValidPlan(full)).toBe(true);
    expect(PlanSchema.safeParse(full).data).toStrictEqual(full);
    expect(isPlainValidPlan(Object.assign(Object.create(null), { id: 'p', steps: [{ id: 'a' }] }))).toBe(true);
  });

  it.each([
    ['an unknown plan key', { id: 'p', steps: [{ id: 'a' }], extra: 1 }],
    ['an unknown step key', { id: 'p', steps: [{ id: 'a', tol: 'echo' }] }],
    ['a field set to undefined', { id: 'p', steps: [{ id: 'a', tool: undefined }] }],
    ['no steps', { id: 'p', steps: [] }],
    ['a step id the schema refuses', { id: 'p', steps: [{ id: 'a b' }] }],
    ['an empty tool name', { id: 'p', steps: [{ id: 'a', tool: '' }] }],
    ['args that are a class instance', { id: 'p', steps: [{ id: 'a', args: new Map() }] }],
    ['args that are an array', { id: 'p', steps: [{ id: 'a', args: [] }] }],
    ['a hole in dependsOn', { id: 'p', steps: [{ id: 'a', dependsOn: holed() }] }],
    ['an infinite timeout', { id: 'p', steps: [{ id: 'a', timeoutMs: Number.POSITIVE_INFINITY }] }],
    ['a fractional maxTurns', { id: 'p', steps: [{ id: 'a', maxTurns: 1.5 }] }],
    ['a symbol key', { id: 'p', steps: [{ id: 'a', [Symbol('s')]: 1 }] }],
    ['a retry policy the schema refuses', { id: 'p', steps: [{ id: 'a', retry: { maxAttempts: 0 } }] }],
    ['an own __proto__ in args', JSON.parse('{"id":"p","steps":[{"id":"a","args":{"__proto__":{}}}]}')],
  ])('leaves %s to the schema', (_name, input) => {
    expect(isPlainValidPlan(input)).toBe(false);
  });
});

describe('validatePlan on plain data', () => {
  it('keeps the plan it was given (no copy) and still copies what needed the schema', () => {
    const plain = { id: 'p', steps: [{ id: 'a', tool: 'echo', args: { text: 'hi' } }] };
    expect(validatePlan(plain).plan).toBe(plain);
    const withUndefined = { id: 'p', goal: undefined, steps: [{ id: 'a', tool: 'echo', args: { text: 'hi' } }] };
    const validation = validatePlan(withUndefined);
    expect(validation.ok).toBe(true);
    expect(validation.plan).not.toBe(withUndefined);
  });

  it('reports the same problems either way', () => {
    const plain = { id: 'p', steps: [{ id: 'a', tool: 'echo', dependsOn: ['ghost'] }] };
    const copied = { id: 'p', goal: undefined, steps: [{ id: 'a', tool: 'echo', dependsOn: ['ghost'] }] };
    expect(validatePlan(plain).problems).toStrictEqual(validatePlan(copied).problems);
    expect(validatePlan(plain).problems.map((problem) => problem.kind)).toStrictEqual(['unknown-dependency']);
  });
});
