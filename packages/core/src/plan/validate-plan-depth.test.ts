import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTestTools } from '../testing/fixtures.js';
import { deeperOutsideArgs, MAX_NESTING_DEPTH, tooDeepPath } from './nesting-depth.js';
import { isPlainValidPlan } from './plan-shape-check.js';
import { toJsonPath } from './references.js';
import { validatePlan } from './validate-plan.js';

const { registry } = createTestTools();

/** `levels` objects and arrays, one inside the other, with a reference at the bottom. */
function nested(levels: number): unknown {
  let value: unknown = { $ref: 's0', pointer: '/value' };
  for (let level = 1; level < levels; level++) value = level % 2 === 0 ? { [`k${level}`]: value } : [value];
  return value;
}

/** A value that contains itself, a few levels down. */
function selfContaining(): unknown {
  const inner: Record<string, unknown> = {};
  const outer = { a: [inner] };
  inner.loop = outer;
  return outer;
}

/** Where a deep value goes: the plan's metadata (before or after `steps`), a step's metadata or args. */
const placement = fc.record({
  where: fc.constantFrom('plan-before', 'plan-after', 'metadata', 'args', 'args-array', 'self'),
  step: fc.nat({ max: 5 }),
  // From well within the limit to just past it: the args sit 4 levels down, metadata 3 or 4.
  levels: fc.integer({ min: MAX_NESTING_DEPTH - 8, max: MAX_NESTING_DEPTH }),
});

/** Six steps (the fourth repeats an id, the fifth has none), with deep values placed in them. */
function planWith(places: readonly { where: string; step: number; levels: number }[]): Record<string, unknown> {
  const steps: Record<string, unknown>[] = ['s0', 's1', 's2', 's1', undefined, 's5'].map((id, index) => ({
    ...(id === undefined ? {} : { id }),
    tool: 'echo',
    ...(index > 0 ? { dependsOn: ['s0'] } : {}),
    args: { value: index },
  }));
  const plan: Record<string, unknown> = { id: 'p' };
  const before = places.filter((place) => place.where === 'plan-before');
  if (before.length > 0) plan.metadata = { deep: nested((before[0] as { levels: number }).levels) };
  plan.steps = steps;
  for (const { where, step, levels } of places) {
    const target = steps[step] as Record<string, unknown>;
    if (where === 'plan-after') plan.goal = nested(levels);
    if (where === 'metadata') target.metadata = { deep: nested(levels) };
    if (where === 'args') target.args = { value: nested(levels) };
    if (where === 'args-array') target.args = [nested(levels)];
    if (where === 'self') target.args = { value: selfContaining() };
  }
  return plan;
}

describe('validatePlan on values nested too deep', () => {
  it('reports the first one in document order, alone, wherever it is (args measured while walked)', () => {
    fc.assert(
      fc.property(fc.array(placement, { maxLength: 3 }), (places) => {
        const input = planWith(places);
        const first = tooDeepPath(input);
        const problems = validatePlan(input, { tools: registry }).problems;
        if (!first) {
          expect(problems.map((problem) => problem.kind)).not.toContain('too-deep');
          return;
        }
        const inArgs = first[0] === 'steps' && first[2] === 'args';
        expect(problems).toEqual([
          expect.objectContaining({ code: inArgs ? 'E202' : 'E001', kind: 'too-deep', path: toJsonPath(first) }),
        ]);
      }),
      { numRuns: 400 },
    );
  });

  it('counts bytes as leaves in the args, as the depth check does', () => {
    const args = { value: nested(MAX_NESTING_DEPTH - 4) };
    let bottom = args.value as unknown[] | Record<string, unknown>;
    while (Array.isArray(bottom) || !('$ref' in bottom)) {
      bottom = (Array.isArray(bottom) ? bottom[0] : Object.values(bottom)[0]) as typeof bottom;
    }
    (bottom as Record<string, unknown>).bytes = new Uint8Array(4);
    const input = {
      id: 'p',
      steps: [
        { id: 's0', tool: 'echo' },
        { id: 's1', tool: 'echo', dependsOn: ['s0'], args },
      ],
    };
    expect(tooDeepPath(input)).toBeUndefined();
    expect(validatePlan(input, { tools: registry }).problems.map((problem) => problem.kind)).not.toContain('too-deep');
  });

  it('measures a plain plan by its shape check: deep metadata, preconditions and expectations too', () => {
    // Plain and valid but for depth: the shape check is the only one that measures these.
    const where = fc.constantFrom('plan-metadata', 'metadata', 'preconditions', 'expect');
    fc.assert(
      fc.property(where, fc.integer({ min: MAX_NESTING_DEPTH - 6, max: MAX_NESTING_DEPTH }), (place, levels) => {
        const deep = { kind: 'deep', deep: nested(levels) };
        const step: Record<string, unknown> = { id: 's1', tool: 'echo', dependsOn: ['s0'], args: { value: 1 } };
        const input: Record<string, unknown> = { id: 'p', steps: [{ id: 's0', tool: 'echo' }, step] };
        if (place === 'plan-metadata') input.metadata = deep;
        if (place === 'metadata') step.metadata = deep;
        if (place === 'preconditions' || place === 'expect') step[place] = [deep];
        const first = tooDeepPath(input);
        expect(isPlainValidPlan(input)).toBe(!deeperOutsideArgs(input));
        const problems = validatePlan(input, { tools: registry }).problems;
        if (!first) {
          expect(problems).toEqual([]);
          return;
        }
        expect(problems).toEqual([
          expect.objectContaining({ code: 'E001', kind: 'too-deep', path: toJsonPath(first) }),
        ]);
      }),
      { numRuns: 200 },
    );
  });
});
