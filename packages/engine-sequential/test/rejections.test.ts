import { approvePlan, ErrorCodes, type Plan, type PlanProblem, type RunStore, StepwiseError } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sequentialEngine } from '../src/index.js';
import { removeTempDirectories, storeVariants, tempDirectory } from './support/stores.js';
import { approve, createSeedTools, echoPlan } from './support/tools.js';

afterAll(removeTempDirectories);

/** Runs `body`, expecting a StepwiseError thrown synchronously; returns it. */
function rejection(body: () => unknown): StepwiseError {
  let thrown: unknown;
  try {
    body();
  } catch (error) {
    thrown = error;
  }
  expect(StepwiseError.isInstance(thrown), `expected a StepwiseError, got ${String(thrown)}`).toBe(true);
  return thrown as StepwiseError;
}

const problemsOf = (error: StepwiseError) => (error.details?.problems ?? []) as PlanProblem[];

describe.each(storeVariants)('rejections before anything runs on $name', (variant) => {
  let store: RunStore;
  let tools: ReturnType<typeof createSeedTools>;
  beforeEach(async () => {
    store = await variant.open();
    tools = createSeedTools(tempDirectory());
  });
  afterEach(async () => {
    // Every rejection happens before the journal: no run, no tool call.
    expect(await store.listRuns()).toEqual([]);
    expect(tools.log.count()).toBe(0);
    await store.close();
  });

  const run = (plan: unknown, authorization = approvePlan(plan as Plan, { by: 'tester' })) =>
    rejection(() => sequentialEngine({ tools: tools.registry, store }).run(plan as Plan, { authorization }));

  it('rejects an invalid plan with E001 and every problem', () => {
    const plan = {
      id: 'broken',
      steps: [
        { id: 'a', tool: 'echo', args: {}, dependsOn: ['ghost'] },
        { id: 'a', tool: 'echo', args: {} },
        { id: 'b', tool: 'echo', args: {}, retry: { maxAttempts: 0 } },
      ],
    };
    const error = run(plan);
    expect(error.code).toBe(ErrorCodes.PLAN_INVALID);
    const kinds = problemsOf(error).map((problem) => problem.kind);
    expect(kinds).toEqual(expect.arrayContaining(['schema', 'duplicate-step-id', 'unknown-dependency']));
    expect(problemsOf(error).find((problem) => problem.kind === 'unknown-dependency')?.path).toBe(
      '/steps/0/dependsOn/0',
    );
  });

  it('rejects a tool outside the whitelist, like one named "rm -rf /", with E201', () => {
    const plan = makePlan([
      { id: 'ok', tool: 'echo', args: {} },
      { id: 'evil', tool: 'rm -rf /', args: {} },
    ]);
    const error = run(plan);
    expect(error.code).toBe(ErrorCodes.TOOL_UNKNOWN);
    expect(problemsOf(error)).toEqual([expect.objectContaining({ code: 'E201', path: '/steps/1/tool' })]);
    expect(error.location).toBe('/steps/1/tool');
  });

  it('rejects typos of registered tools (file_rad) with E201', () => {
    expect(run(makePlan([{ id: 'x', tool: 'file_rad', args: { path: 'a' } }])).code).toBe(ErrorCodes.TOOL_UNKNOWN);
  });

  it('rejects a missing required argument with E202 naming it', () => {
    const plan = makePlan([{ id: 'patch', tool: 'splice_patch', args: { file: 'src/lib.rs', symbol: 'foo' } }]);
    const error = run(plan);
    expect(error.code).toBe(ErrorCodes.ARGUMENTS_INVALID);
    expect(problemsOf(error)[0]?.path).toMatch(/^\/steps\/0\/args/);
    expect(error.message).toContain('with');
  });

  it('reports unknown tools and bad arguments together as E001 with both problems', () => {
    const plan = makePlan([
      { id: 'a', tool: 'nope', args: {} },
      { id: 'b', tool: 'note', args: {} },
    ]);
    const error = run(plan);
    expect(error.code).toBe(ErrorCodes.PLAN_INVALID);
    expect(
      problemsOf(error)
        .map((problem) => problem.code)
        .sort(),
    ).toEqual(['E201', 'E202']);
  });

  it('rejects argument references: strict passes arguments exactly as written', () => {
    const plan = makePlan([
      { id: 'read', tool: 'echo', args: { value: 1 } },
      { id: 'object', tool: 'echo', args: { value: { $ref: 'read', pointer: '/value' } }, dependsOn: ['read'] },
      { id: 'string', tool: 'echo', args: { value: '$read' }, dependsOn: ['read'] },
    ]);
    const error = run(plan);
    expect(error.code).toBe(ErrorCodes.PLAN_INVALID);
    expect(problemsOf(error).map((problem) => [problem.kind, problem.path])).toEqual([
      ['reference-forbidden', '/steps/1/args/value'],
      ['reference-forbidden', '/steps/2/args/value'],
    ]);
  });

  it('rejects a step that depends on a later step (array order is execution order)', () => {
    const plan = makePlan([
      { id: 'b', tool: 'echo', args: {}, dependsOn: ['a'] },
      { id: 'a', tool: 'echo', args: {} },
    ]);
    const error = run(plan);
    expect(error.code).toBe(ErrorCodes.PLAN_INVALID);
    expect(problemsOf(error)).toEqual([
      expect.objectContaining({ kind: 'dependency-order', path: '/steps/0/dependsOn/0' }),
    ]);
  });

  it('rejects a plan without authorization (E002)', () => {
    const plan = echoPlan(1);
    const engine = sequentialEngine({ tools: tools.registry, store });
    expect(rejection(() => engine.run(plan)).code).toBe(ErrorCodes.NOT_AUTHORIZED);
    expect(rejection(() => engine.run(plan, {})).code).toBe(ErrorCodes.NOT_AUTHORIZED);
  });

  it('rejects an authorization that was never approved by anyone (E002)', () => {
    const plan = echoPlan(1);
    const pending = { ...approve(plan), by: '' };
    expect(run(plan, pending).code).toBe(ErrorCodes.NOT_AUTHORIZED);
    expect(run(plan, { planId: plan.id } as never).code).toBe(ErrorCodes.NOT_AUTHORIZED);
  });

  it('rejects an authorization for another plan id (E003)', () => {
    const plan = echoPlan(1);
    const other = echoPlan(1, 'another_plan');
    const error = run(plan, approve(other));
    expect(error.code).toBe(ErrorCodes.PLAN_MISMATCH);
    expect(error.location).toBe('/authorization/planId');
  });

  it('rejects a plan edited after approval (E003): the digest no longer matches', async () => {
    const plan = makePlan([{ id: 'read', tool: 'file_read', args: { path: 'README.md' } }]);
    const authorization = approve(plan);
    const edited = makePlan([{ id: 'read', tool: 'file_read', args: { path: '../../etc/shadow' } }]);
    const error = run(edited, authorization);
    expect(error.code).toBe(ErrorCodes.PLAN_MISMATCH);
    expect(error.location).toBe('/authorization/planDigest');
    // Key order is not an edit: the same plan written differently still matches.
    const reordered = { steps: plan.steps, goal: plan.goal, version: plan.version, id: plan.id } as Plan;
    const elsewhere = sequentialEngine({ tools: createSeedTools(tempDirectory()).registry });
    expect((await elsewhere.run(reordered, { authorization }).result).status).toBe('completed');
  });

  it('rejects a runId that is not the one the authorization derives (E003)', () => {
    const plan = echoPlan(1);
    const authorization = approve(plan);
    const engine = sequentialEngine({ tools: tools.registry, store });
    const error = rejection(() => engine.run(plan, { authorization, runId: 'run_mine' }));
    expect(error.code).toBe(ErrorCodes.PLAN_MISMATCH);
    expect(error.location).toBe('/runId');
  });

  it('checks the plan before the authorization: an invalid plan is E001 even without approval', () => {
    const engine = sequentialEngine({ tools: tools.registry, store });
    expect(rejection(() => engine.run({ id: 'x', steps: [] } as unknown as Plan)).code).toBe(ErrorCodes.PLAN_INVALID);
  });

  it('validate() returns the same problems without throwing', () => {
    const engine = sequentialEngine({ tools: tools.registry, store });
    const validation = engine.validate(makePlan([{ id: 'evil', tool: 'rm -rf /', args: {} }]));
    expect(validation.ok).toBe(false);
    expect(validation.problems).toEqual([expect.objectContaining({ code: 'E201' })]);
    expect(engine.validate(echoPlan(2)).ok).toBe(true);
  });
});
