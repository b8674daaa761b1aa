import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { readAll } from '../journal/run-store.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { validatePlan } from '../plan/validate-plan.js';
import { MemoryStore } from '../store/memory-store.js';
import { defineTool } from '../tools/define-tool.js';
import type { ToolCatalog } from '../tools/tool-registry.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { permissivePolicy } from './policies/permissive-policy.js';
import { createPolicyEngine } from './policy-engine.js';
import { ValidatedPlans } from './validated-plans.js';

const noop = defineTool({
  name: 'noop',
  description: 'nothing',
  input: { type: 'object', properties: { n: { type: 'number' } }, additionalProperties: false },
  effect: 'read',
  execute: () => ({}),
});
const other = defineTool({
  name: 'other',
  description: 'nothing',
  input: { type: 'object' },
  effect: 'read',
  execute: () => ({}),
});

const planOf = (): Plan => ({
  id: 'p',
  version: 1,
  goal: 'g',
  steps: [
    { id: 'a', tool: 'noop', args: { n: 1 } },
    { id: 'b', tool: 'noop', args: { n: 2 }, dependsOn: ['a'] },
  ],
});

/** Checks through a ValidatedPlans, counting the whole validations it asks for. */
function counting(tools: ToolCatalog, remember = true) {
  const plans = new ValidatedPlans(remember);
  let validations = 0;
  const check = (plan: unknown) =>
    plans.check(plan, (input) => {
      validations++;
      return validatePlan(input, { tools });
    });
  return { check, validations: () => validations };
}

const codeOf = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    if (StepwiseError.isInstance(error)) return error.code;
    throw error;
  }
  return undefined;
};

describe('ValidatedPlans: a plan run again unchanged is not validated again', () => {
  it('validates a plan once, then answers from its digest while it is unchanged', () => {
    const { check, validations } = counting(new ToolRegistry([noop]));
    const plan = planOf();
    const first = check(plan);
    const second = check(plan);
    expect(first.validation.ok).toBe(true);
    expect(second.validation).toBe(first.validation);
    expect(second.digest).toBe(planDigest(plan));
    expect(validations()).toBe(1);
    // An equal plan in another object is validated on its own.
    check(planOf());
    expect(validations()).toBe(2);
  });

  it('validates again, and refuses, a plan changed since it passed', () => {
    const { check, validations } = counting(new ToolRegistry([noop]));
    const plan = planOf();
    check(plan);
    (plan.steps[1] as { args: Record<string, unknown> }).args = { n: 'two' };
    const afterArgs = check(plan);
    expect(afterArgs.validation.ok).toBe(false);
    expect(afterArgs.digest).toBeUndefined();
    expect(validations()).toBe(2);

    const grown = planOf();
    check(grown);
    grown.steps.push({ id: 'c', tool: 'missing' });
    expect(check(grown).validation.ok).toBe(false);
    const cyclic = planOf();
    check(cyclic);
    (cyclic.steps[0] as { dependsOn?: string[] }).dependsOn = ['b'];
    expect(check(cyclic).validation.problems.map((problem) => problem.kind)).toContain('dependency-cycle');
  });

  it('validates again a plan given an undefined value, or made too deep to hash', () => {
    const { check, validations } = counting(new ToolRegistry([noop]));
    const plan = planOf();
    check(plan);
    (plan.steps[0] as { args: Record<string, unknown> }).args = { n: undefined };
    check(plan);
    expect(validations()).toBe(2);

    const deep = planOf();
    check(deep);
    let nested: Record<string, unknown> = {};
    const top = nested;
    for (let depth = 0; depth < 20_000; depth++) nested = nested.a = {};
    (deep as { metadata?: unknown }).metadata = top;
    const checked = check(deep);
    expect(checked.validation.ok).toBe(false);
    expect(checked.validation.problems[0]?.kind).toBe('too-deep');
  });

  it('validates again a plan whose keys were only reordered, with the same digest', () => {
    const { check, validations } = counting(new ToolRegistry([noop]));
    const plan = planOf();
    const first = check(plan);
    const step = plan.steps[0] as Record<string, unknown>;
    const { id, ...rest } = step;
    plan.steps[0] = { ...rest, id } as (typeof plan.steps)[0];
    const second = check(plan);
    expect(validations()).toBe(2);
    expect(second.validation.ok).toBe(true);
    expect(second.digest).toBe(first.digest);
  });

  it('compares a plan too large to keep its text by its digest, and still sees a change', () => {
    const { check, validations } = counting(new ToolRegistry([noop]));
    const plan = { ...planOf(), goal: 'g'.repeat((1 << 20) + 1) };
    check(plan);
    expect(check(plan).digest).toBe(planDigest(plan));
    expect(validations()).toBe(1);
    (plan.steps[1] as { args: Record<string, unknown> }).args = { n: 'two' };
    expect(check(plan).validation.ok).toBe(false);
    expect(validations()).toBe(2);
  });

  it('does not remember an invalid plan: registering its tool later makes it run', () => {
    const registry = new ToolRegistry([noop]);
    const { check } = counting(registry);
    const plan = planOf();
    plan.steps.push({ id: 'c', tool: 'other' });
    expect(check(plan).validation.ok).toBe(false);
    registry.register(other);
    expect(check(plan).validation.ok).toBe(true);
  });

  it('remembers nothing with a catalog that is not a ToolRegistry (it may change)', () => {
    const { check, validations } = counting(new ToolRegistry([noop]), false);
    const plan = planOf();
    check(plan);
    expect(check(plan).digest).toBeUndefined();
    expect(validations()).toBe(2);
  });
});

describe('an engine running one plan object again', () => {
  it('journals the digest of the plan it runs, and refuses the plan once it is broken', async () => {
    const store = new MemoryStore();
    const options = { tools: new ToolRegistry([noop]), store };
    const engine = createPolicyEngine({ policy: permissivePolicy(options), options });
    const plan = planOf();
    for (let run = 0; run < 2; run++) {
      const result = await engine.run(plan, { runId: `run_${run}` }).result;
      expect(result.status).toBe('completed');
      const [start] = await readAll(store, `run_${run}`);
      expect(start).toMatchObject({ type: 'run-start', planDigest: planDigest(plan) });
    }
    plan.steps[0] = { id: 'a', tool: 'noop', args: { n: 'one' } };
    expect(codeOf(() => engine.run(plan))).toBe(ErrorCodes.ARGUMENTS_INVALID);
    plan.steps[0] = { id: 'a', tool: 'noop', args: { n: 3 } };
    const again = await engine.run(plan, { runId: 'run_again' }).result;
    expect(again.status).toBe('completed');
    const [start] = await readAll(store, 'run_again');
    expect(start).toMatchObject({ planDigest: planDigest(plan) });
  });
});
