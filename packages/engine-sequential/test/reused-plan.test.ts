import {
  approvePlan,
  defineTool,
  ErrorCodes,
  MemoryStore,
  type Plan,
  StepwiseError,
  ToolRegistry,
} from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sequentialEngine } from '../src/index.js';

/** A tool whose input schema counts how often arguments are checked against it. */
function countingTools() {
  const checks = { count: 0 };
  const input = z.object({ text: z.string() }).superRefine(() => {
    checks.count++;
  });
  const tools = new ToolRegistry([
    defineTool({
      name: 'say',
      description: 'returns its text',
      input,
      effect: 'read',
      execute: ({ text }) => ({ text }),
    }),
  ]);
  return { tools, checks };
}

describe('a plan object an engine runs again', () => {
  it('is validated once, and again from the start once it changed', async () => {
    const { tools, checks } = countingTools();
    const engine = sequentialEngine({ tools, store: new MemoryStore() });
    const plan: Plan = makePlan([{ id: 'a', tool: 'say', args: { text: 'hello' } }], { id: 'reused' });

    const first = await engine.run(plan, { authorization: approvePlan(plan, { by: 'tester' }) }).result;
    expect(first.status).toBe('completed');
    // The plan's validation and the kernel's check of the call.
    expect(checks.count).toBe(2);

    const second = await engine.run(plan, { authorization: approvePlan(plan, { by: 'tester' }) }).result;
    expect(second.status).toBe('completed');
    expect(second.runId).not.toBe(first.runId);
    // Only the kernel's check: the engine remembered the plan it had found valid.
    expect(checks.count).toBe(3);

    // The same object, edited: its arguments no longer fit the tool, and it is approved as it now is.
    (plan.steps[0] as { args: Record<string, unknown> }).args = { text: 42 };
    const approval = approvePlan(plan, { by: 'tester' });
    let thrown: unknown;
    try {
      engine.run(plan, { authorization: approval });
    } catch (error) {
      thrown = error;
    }
    expect(StepwiseError.isInstance(thrown)).toBe(true);
    expect((thrown as StepwiseError).code).toBe(ErrorCodes.ARGUMENTS_INVALID);
    expect(await engine.store.listRuns()).toHaveLength(2);
  });

  it('still refuses an approval of another digest for a remembered plan', async () => {
    const { tools } = countingTools();
    const engine = sequentialEngine({ tools, store: new MemoryStore() });
    const plan: Plan = makePlan([{ id: 'a', tool: 'say', args: { text: 'hello' } }], { id: 'reused' });
    await engine.run(plan, { authorization: approvePlan(plan, { by: 'tester' }) }).result;
    const stale = approvePlan(plan, { by: 'tester' });
    (plan.steps[0] as { args: Record<string, unknown> }).args = { text: 'changed' };
    let thrown: unknown;
    try {
      engine.run(plan, { authorization: stale });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as StepwiseError).code).toBe(ErrorCodes.PLAN_MISMATCH);
    expect(await engine.store.listRuns()).toHaveLength(1);
  });
});

describe('sequentialEngine options', () => {
  it('refuses invalid options when the engine is created (E601 naming the option), before any run', () => {
    const { tools } = countingTools();
    const cases: [Record<string, unknown>, string][] = [
      [{ revisionApproval: 'later' }, 'revisionApproval'],
      [{ leaseTtlMs: -1 }, 'leaseTtlMs'],
      [{ durability: 'sometimes' }, 'durability'],
    ];
    for (const [extra, location] of cases) {
      let thrown: unknown;
      try {
        sequentialEngine({ tools, ...extra } as Parameters<typeof sequentialEngine>[0]);
      } catch (error) {
        thrown = error;
      }
      expect(StepwiseError.isInstance(thrown), location).toBe(true);
      expect((thrown as StepwiseError).code).toBe(ErrorCodes.CONFIG_INVALID);
      expect((thrown as StepwiseError).location).toBe(location);
    }
  });
});
