import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validatePlan } from '../src/plan/validate-plan.js';
import { createTestTools, seededRandom } from '../src/testing/fixtures.js';
import { validatePlanBefore } from './validate-plan-before.js';

const { registry } = createTestTools();
const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];

/** Args that hold references of both forms, to known and unknown steps, nested and escaped. */
const argsArbitrary = fc.oneof(
  fc.record({ value: fc.constantFrom(...ids.map((id) => `$${id}`), '$ghost', '$$a', 'plain') }),
  fc.record({ text: fc.record({ $ref: fc.constantFrom(...ids, 'ghost'), pointer: fc.constantFrom('/value', '') }) }),
  fc.record({
    value: fc.array(fc.oneof(fc.constantFrom(...ids.map((id) => `$${id}/value`)), fc.integer()), { maxLength: 3 }),
  }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
  fc.anything(),
);

const stepArbitrary = fc.record(
  {
    id: fc.oneof(fc.constantFrom(...ids), fc.string({ maxLength: 2 })),
    tool: fc.oneof(fc.constantFrom('echo', 'note', 'missing'), fc.anything()),
    // Repeated entries, unknown ids and self-dependencies included.
    dependsOn: fc.oneof(fc.array(fc.constantFrom(...ids, 'z'), { maxLength: 6 }), fc.anything()),
    args: argsArbitrary,
  },
  { requiredKeys: ['id'] },
);

/** An acyclic plan (dependencies only on earlier steps) whose references reach far back. */
const acyclicArbitrary = fc.integer({ min: 1, max: 40 }).chain((size) =>
  fc
    .array(
      fc.record({
        dependencies: fc.array(fc.nat(), { maxLength: 3 }),
        references: fc.array(fc.nat(), { maxLength: 3 }),
      }),
      { minLength: size, maxLength: size },
    )
    .map((shape) => ({
      id: 'p',
      steps: shape.map(({ dependencies, references }, index) => ({
        id: `s${index}`,
        tool: 'echo',
        ...(index > 0 ? { dependsOn: dependencies.map((pick) => `s${pick % index}`) } : {}),
        args: { value: references.map((pick) => ({ $ref: `s${pick % size}`, pointer: '/value' })) },
      })),
    })),
);

/** One reference of a larger plan: to an ancestor `hops` links back, to any earlier step, or to no step. */
const referenceShape = fc.record({
  to: fc.constantFrom('ancestor', 'earlier', 'unknown'),
  hops: fc.integer({ min: 1, max: 8 }),
  pick: fc.nat(),
  form: fc.constantFrom('object', 'string'),
  // How deep inside the args the reference sits, under objects and arrays.
  depth: fc.nat({ max: 5 }),
});

/** Wraps `value` `depth` levels deep, alternating objects and arrays (keys that need escaping included). */
function nest(value: unknown, depth: number): unknown {
  let nested = value;
  for (let level = 0; level < depth; level++) nested = level % 2 === 0 ? { [`k/${level}~`]: nested } : [0, nested];
  return nested;
}

/**
 * Acyclic plans of up to 150 steps, dependencies within a window of recent steps, references in
 * both forms at any depth: enough steps and hops that the labels, the bounded searches and (on
 * some) the bitsets all answer, compared with the previous implementation's walk.
 */
const largerAcyclicArbitrary = fc.integer({ min: 2, max: 150 }).chain((size) =>
  fc
    .record({
      window: fc.constantFrom(2, 8, 40, 150),
      steps: fc.array(
        fc.record({
          dependencies: fc.array(fc.nat(), { maxLength: 3 }),
          references: fc.array(referenceShape, { maxLength: 3 }),
        }),
        { minLength: size, maxLength: size },
      ),
    })
    .map(({ window, steps }) => {
      const dependencies = steps.map(({ dependencies: picks }, index) =>
        index === 0 ? [] : [...new Set(picks.map((pick) => index - 1 - (pick % Math.min(window, index))))],
      );
      return {
        id: 'p',
        steps: steps.map(({ references }, index) => ({
          id: `s${index}`,
          tool: 'echo',
          ...(index > 0 ? { dependsOn: (dependencies[index] as number[]).map((slot) => `s${slot}`) } : {}),
          args: {
            value: references.map((reference, position) => {
              const target = referenceTarget(reference, index, dependencies);
              const value = reference.form === 'object' ? { $ref: target, pointer: '/value/0' } : `$${target}/value/0`;
              return nest(value, (reference.depth + position) % 6);
            }),
          },
        })),
      };
    }),
);

function referenceTarget(
  reference: { to: string; hops: number; pick: number },
  index: number,
  dependencies: readonly (readonly number[])[],
): string {
  if (reference.to === 'unknown') return `ghost${reference.pick % 3}`;
  if (reference.to === 'earlier') return `s${reference.pick % Math.max(1, index)}`;
  let target = index;
  for (let hop = 0, pick = reference.pick; hop < reference.hops; hop++, pick = Math.floor(pick / 3)) {
    const own = dependencies[target] as readonly number[];
    if (own.length === 0) break;
    target = own[pick % own.length] as number;
  }
  return `s${target}`;
}

/**
 * Thousands of steps in chains laid out round-robin, a fifth of them also depending on a step of
 * another chain; each step references a step far back in its own chain (an ancestor) or, one in
 * ten, any earlier step (often not one). Searches without labels give up on references this far
 * back, so the labels are built, searched with, and some references left to the bitsets.
 */
const chainsArbitrary = fc
  .record({
    size: fc.integer({ min: 1500, max: 3000 }),
    chains: fc.constantFrom(1, 3, 8),
    seed: fc.integer({ min: 1, max: 1_000_000 }),
  })
  .map(({ size, chains, seed }) => {
    const random = seededRandom(seed);
    const steps = Array.from({ length: size }, (_, index) => {
      const dependsOn = index >= chains ? [`s${index - chains}`] : [];
      if (chains > 1 && index > chains && random() < 0.2) {
        dependsOn.push(`s${index - 1 - Math.floor(random() * (chains - 1))}`);
      }
      const rounds = Math.floor(index / chains);
      const target =
        random() < 0.9 ? index - chains * (1 + Math.floor(random() * rounds)) : Math.floor(random() * index);
      const reference = index % 2 === 0 ? { $ref: `s${target}`, pointer: '/value' } : { nested: [`$s${target}/value`] };
      return {
        id: `s${index}`,
        tool: 'echo',
        ...(dependsOn.length > 0 ? { dependsOn } : {}),
        ...(rounds > 0 && target >= 0 && target !== index ? { args: { value: reference } } : {}),
      };
    });
    return { id: 'p', steps };
  });

describe('validatePlan reports what the previous implementation reported', () => {
  it('on random, often broken plans, for every engine', () => {
    fc.assert(
      fc.property(
        fc.record({ id: fc.string(), steps: fc.array(stepArbitrary, { maxLength: 10 }) }),
        fc.constantFrom('dag', 'sequential', 'agentic'),
        fc.boolean(),
        (input, engine, withTools) => {
          const options = { engine, ...(withTools ? { tools: registry } : {}) };
          expect(validatePlan(input, options)).toEqual(validatePlanBefore(input, options));
        },
      ),
      { numRuns: 1000 },
    );
  }, 120_000);

  it('on acyclic plans with references anywhere (far back, forward, to themselves)', () => {
    fc.assert(
      fc.property(acyclicArbitrary, fc.constantFrom('dag', 'sequential'), (input, engine) => {
        const now = validatePlan(input, { engine, tools: registry });
        expect(now).toEqual(validatePlanBefore(input, { engine, tools: registry }));
      }),
      { numRuns: 500 },
    );
  }, 120_000);

  it('on plans of thousands of steps whose references need the labels', () => {
    fc.assert(
      fc.property(chainsArbitrary, (input) => {
        const now = validatePlan(input, { tools: registry });
        expect(now).toEqual(validatePlanBefore(input, { tools: registry }));
      }),
      { numRuns: 12 },
    );
  }, 120_000);

  it('on larger acyclic plans with references many hops back, at any depth, in both forms', () => {
    fc.assert(
      fc.property(largerAcyclicArbitrary, fc.constantFrom('dag', 'sequential'), (input, engine) => {
        const now = validatePlan(input, { engine, tools: registry });
        expect(now).toEqual(validatePlanBefore(input, { engine, tools: registry }));
      }),
      { numRuns: 300 },
    );
  }, 120_000);
});
