import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { createTestTools, makePlan, randomDagPlan } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import type { Plan } from './plan-schema.js';
import { parsePlan, validatePlan } from './validate-plan.js';

const { registry } = createTestTools();
const kinds = (input: unknown, options = {}) =>
  validatePlan(input, { tools: registry, ...options }).problems.map((problem) => [problem.kind, problem.path]);

describe('validatePlan', () => {
  it('accepts a valid plan and returns a topological order', () => {
    const plan = makePlan([
      { id: 'b', tool: 'echo', dependsOn: ['a'] },
      { id: 'a', tool: 'echo' },
    ]);
    const result = validatePlan(plan, { tools: registry });
    expect(result.ok).toBe(true);
    expect(result.ok && result.order).toEqual(['a', 'b']);
  });

  it('reports schema problems with JSON paths, and keeps checking the rest', () => {
    const problems = validatePlan(
      {
        id: 'p',
        steps: [
          { id: 'a', tool: 'echo', dependOn: ['x'] },
          { id: 'b', tool: 5 },
          { id: 'a', tool: 'echo' },
        ],
      },
      { tools: registry },
    ).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          code: 'E001',
          kind: 'schema',
          path: '/steps/0/dependOn',
          message: 'unknown key "dependOn"; did you mean "dependsOn"?',
        }),
        expect.objectContaining({ code: 'E001', kind: 'schema', path: '/steps/1/tool' }),
        expect.objectContaining({ code: 'E001', kind: 'duplicate-step-id', path: '/steps/2/id' }),
      ]),
    );
  });

  it('rejects non-objects, empty step lists and bad ids', () => {
    expect(kinds(null)).toEqual([['schema', '']]);
    expect(kinds({ id: 'p', steps: [] })).toEqual([['schema', '/steps']]);
    expect(kinds(makePlan([{ id: 'a/b', tool: 'echo' }]))).toEqual([['schema', '/steps/0/id']]);
  });

  it('finds unknown dependencies', () => {
    expect(kinds(makePlan([{ id: 'a', tool: 'echo', dependsOn: ['ghost'] }]))).toEqual([
      ['unknown-dependency', '/steps/0/dependsOn/0'],
    ]);
  });

  it('names every cycle with its members in order', () => {
    const plan = makePlan([
      { id: 'a', tool: 'echo', dependsOn: ['c'] },
      { id: 'b', tool: 'echo', dependsOn: ['a'] },
      { id: 'c', tool: 'echo', dependsOn: ['b'] },
      { id: 'd', tool: 'echo', dependsOn: ['d'] },
      { id: 'e', tool: 'echo' },
    ]);
    const problems = validatePlan(plan).problems.filter((problem) => problem.kind === 'dependency-cycle');
    expect(problems.map((problem) => problem.message).sort()).toEqual([
      'dependency cycle: a → b → c → a',
      'dependency cycle: d → d',
    ]);
  });

  it('requires dependencies to come first for the sequential engine', () => {
    const plan = makePlan([
      { id: 'a', tool: 'echo', dependsOn: ['b'] },
      { id: 'b', tool: 'echo' },
    ]);
    expect(kinds(plan, { engine: 'sequential' })).toEqual([['dependency-order', '/steps/0/dependsOn/0']]);
    expect(kinds(plan)).toEqual([]);
  });

  it('requires a tool except on the agentic engine', () => {
    const plan = makePlan([{ id: 'goal', description: 'fix the test' }]);
    expect(kinds(plan)).toEqual([['missing-tool', '/steps/0/tool']]);
    expect(validatePlan(plan, { engine: 'agentic' }).ok).toBe(true);
  });

  it('reports unknown tools (E201) and bad args (E202) against the registry', () => {
    const problems = validatePlan(
      makePlan([
        { id: 'a', tool: 'rm -rf /' },
        { id: 'b', tool: 'note', args: {} },
        { id: 'c', tool: 'note', args: { text: 5 } },
      ]),
      { tools: registry },
    ).problems;
    expect(problems.map((problem) => [problem.code, problem.kind, problem.path])).toEqual([
      ['E201', 'unknown-tool', '/steps/0/tool'],
      ['E202', 'invalid-args', '/steps/1/args/text'],
      ['E202', 'invalid-args', '/steps/2/args/text'],
    ]);
  });

  it('validates args against plain JSON Schemas too', () => {
    const tools = new ToolRegistry([
      defineTool({
        name: 'json_tool',
        description: 'd',
        input: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false },
        effect: 'read',
        execute: () => ({}),
      }),
    ]);
    const problems = validatePlan(makePlan([{ id: 'a', tool: 'json_tool', args: { m: 1 } }]), { tools }).problems;
    expect(problems.map((problem) => problem.kind)).toEqual(['invalid-args', 'invalid-args']);
  });

  it('checks references: known step, transitive dependency, not in strict plans', () => {
    const plan = makePlan([
      { id: 'a', tool: 'echo' },
      { id: 'b', tool: 'echo', dependsOn: ['a'] },
      { id: 'c', tool: 'note', dependsOn: ['b'], args: { text: { $ref: 'a', pointer: '/value' } } },
      { id: 'd', tool: 'note', args: { text: '$c' } },
      { id: 'e', tool: 'echo', args: { value: '$ghost' } },
      { id: 'f', tool: 'echo', args: { value: '$$literal' } },
    ]);
    expect(kinds(plan)).toEqual([
      ['reference-not-dependency', '/steps/3/args/text'],
      ['reference-unknown-step', '/steps/4/args/value'],
    ]);
    expect(kinds(plan, { engine: 'sequential' })).toEqual([
      ['reference-forbidden', '/steps/2/args/text'],
      ['reference-forbidden', '/steps/3/args/text'],
    ]);
  });

  it('judges every reference of a step holding more than a batch of them, in document order', () => {
    // 700 steps, and a join step referencing each: its ids are looked up in several batches. The
    // ones it does not depend on come after the first batch; a step after it references one too.
    const sources = Array.from({ length: 700 }, (_, index) => ({ id: `s${index}`, tool: 'echo' }));
    const references: unknown[] = sources.map((step, index) =>
      index % 2 === 0 ? `$${step.id}/value` : { $ref: step.id },
    );
    const unrelated = (index: number) => index >= 300 && index % 100 === 0;
    const dependsOn = sources.filter((_, index) => !unrelated(index)).map((step) => step.id);
    const plan = makePlan([
      ...sources,
      { id: 'join', tool: 'echo', dependsOn, args: { value: references } },
      { id: 'after', tool: 'echo', dependsOn: ['join', 's1'], args: { value: '$s1' } },
      { id: 'last', tool: 'echo', dependsOn: ['after'], args: { value: { $ref: 'ghost' } } },
    ]);
    expect(kinds(plan)).toEqual([
      ...[300, 400, 500, 600].map((index) => ['reference-not-dependency', `/steps/700/args/value/${index}`]),
      ['reference-unknown-step', '/steps/702/args/value'],
    ]);
    // The same references spread one per step: the batches cross step boundaries.
    const spread = makePlan([
      ...sources,
      ...references.map((value, index) => ({
        id: `r${index}`,
        tool: 'echo',
        dependsOn: [unrelated(index) ? 's1' : `s${index}`],
        args: { value },
      })),
    ]);
    expect(kinds(spread)).toEqual(
      [300, 400, 500, 600].map((index) => ['reference-not-dependency', `/steps/${700 + index}/args/value`]),
    );
  });

  it('does not flag a reference position as an argument type error', () => {
    const plan = makePlan([
      { id: 'a', tool: 'echo' },
      { id: 'b', tool: 'note', dependsOn: ['a'], args: { text: { $ref: 'a', pointer: '/value' } } },
    ]);
    expect(validatePlan(plan, { tools: registry }).ok).toBe(true);
  });

  it('never throws on random input and accepts only DAGs with a consistent order', () => {
    const stepArbitrary = fc.record(
      {
        id: fc.oneof(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), fc.string()),
        tool: fc.oneof(fc.constantFrom('echo', 'note', 'missing'), fc.anything()),
        dependsOn: fc.oneof(fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'z')), fc.anything()),
        args: fc.oneof(fc.constant({ value: '$a' }), fc.dictionary(fc.string(), fc.jsonValue()), fc.anything()),
      },
      { requiredKeys: ['id'] },
    );
    const planArbitrary = fc.oneof(
      fc.record({ id: fc.string(), steps: fc.array(stepArbitrary, { maxLength: 8 }) }),
      fc.anything(),
    );
    fc.assert(
      fc.property(planArbitrary, (input) => {
        const result = validatePlan(input, { tools: registry });
        if (!result.ok) return result.problems.length > 0;
        const position = new Map(result.order.map((id, index) => [id, index]));
        return result.plan.steps.every((step) =>
          (step.dependsOn ?? []).every(
            (dependency) => (position.get(dependency) ?? -1) < (position.get(step.id) ?? -1),
          ),
        );
      }),
      { numRuns: 2000 },
    );
    // 2,000 random plans: seconds on a loaded machine.
  }, 60_000);

  it('accepts every random DAG with an order consistent with dependsOn', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 1_000_000 }), (size, seed) => {
        const plan = randomDagPlan(size, { seed });
        const result = validatePlan(plan, { tools: registry });
        if (!result.ok) return false;
        const position = new Map(result.order.map((id, index) => [id, index]));
        return plan.steps.every((step) =>
          (step.dependsOn ?? []).every(
            (dependency) => (position.get(dependency) as number) < (position.get(step.id) as number),
          ),
        );
      }),
    );
  });
});

describe('parsePlan', () => {
  it('gives line and column for broken JSON (E004)', () => {
    const error = (() => {
      try {
        parsePlan('{\n  "id": "p",\n  "steps": [,]\n}');
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(StepwiseError.isInstance(error)).toBe(true);
    expect((error as StepwiseError).code).toBe(ErrorCodes.INPUT_INVALID);
    expect((error as StepwiseError).location).toBe('line 3, column 13');
    expect((error as StepwiseError).message).toContain('value expected');
  });

  it('suggests the registered tool a misspelt name was meant to be', () => {
    const tools = new ToolRegistry([
      defineTool({
        name: 'file_read',
        description: '',
        input: z.object({}),
        effect: 'read',
        execute: async () => ({}),
      }),
    ]).alias('read_file', 'file_read');
    const [typo, far, alias] = validatePlan(
      makePlan([
        { id: 'a', tool: 'file_raed' },
        { id: 'b', tool: 'deploy' },
        { id: 'c', tool: 'read_fiel' },
      ]),
      { tools },
    ).problems;
    expect(typo).toMatchObject({ code: 'E201', path: '/steps/0/tool' });
    expect(typo?.message).toMatch(/; did you mean "file_read"\?$/);
    expect(far?.message).not.toContain('did you mean');
    expect(alias?.message).toMatch(/; did you mean "read_file"\?$/);
  });

  it('suggests keys at every depth, at the path of the key', () => {
    const plan = { id: 'p', steps: [{ id: 'a', tool: 'echo', retry: { maxAttempts: 2, factr: 2 } }], gaol: 'x' };
    expect(validatePlan(plan).problems.map(({ path, message }) => [path, message])).toEqual([
      ['/steps/0/retry/factr', 'unknown key "factr"; did you mean "factor"?'],
      ['/gaol', 'unknown key "gaol"; did you mean "goal"?'],
    ]);
  });

  it('throws E001 with every problem for an invalid plan, and returns a valid one', () => {
    expect(() => parsePlan('{"id":"p","steps":[{"id":"a"},{"id":"a","tool":"echo"}]}')).toThrowError(
      expect.objectContaining({ code: 'E001', details: { problems: expect.arrayContaining([]) } }),
    );
    const plan: Plan = parsePlan('{"id":"p","steps":[{"id":"a","tool":"echo"}]}', { tools: registry });
    expect(plan.steps[0]?.tool).toBe('echo');
  });

  it('reports E201 alone when unknown tools are the only problem', () => {
    expect(() => parsePlan('{"id":"p","steps":[{"id":"a","tool":"nope"}]}', { tools: registry })).toThrowError(
      expect.objectContaining({ code: 'E201' }),
    );
  });
});

describe('tool schemas', () => {
  it('renders zod and JSON schemas for function calling', () => {
    const tools = new ToolRegistry([
      defineTool({
        name: 'z',
        description: 'zod',
        input: z.object({ path: z.string() }),
        effect: 'read',
        execute: () => 1,
      }),
    ]);
    const [definition] = tools.toFunctionDefinitions();
    expect(definition?.parameters).toMatchObject({ type: 'object', properties: { path: { type: 'string' } } });
  });
});

describe('planGraph / planGenerations', () => {
  it('layers a diamond and keeps awkward ids apart', async () => {
    const { planGenerations, planGraph } = await import('./plan-graph.js');
    const plan = makePlan([
      { id: 'toString', tool: 'echo' },
      { id: 'b', tool: 'echo', dependsOn: ['toString'] },
      { id: 'c', tool: 'echo', dependsOn: ['toString'] },
      { id: 'd', tool: 'echo', dependsOn: ['b', 'c'] },
    ]);
    expect(planGenerations(plan)).toEqual([['toString'], ['b', 'c'], ['d']]);
    expect(planGraph(plan).size).toBe(4);
  });
});
