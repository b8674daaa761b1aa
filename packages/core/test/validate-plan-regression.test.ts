import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validatePlan } from '../src/plan/validate-plan.js';
import { createTestTools } from '../src/testing/fixtures.js';
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
});
