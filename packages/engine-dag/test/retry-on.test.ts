import { defineTool, ErrorCodes, MemoryStore, readAll, ToolError, validatePlan } from '@stepwise/core';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';

/** `exits` fails like a command that exits non-zero (E304, not retryable) `failures` times per step, then succeeds. */
function engineWithExits(retry?: Parameters<typeof dagEngine>[0]['retry']) {
  const { registry } = createTestTools();
  const calls = new Map<string, number>();
  registry.register(
    defineTool({
      name: 'exits',
      description: 'Exits non-zero a few times.',
      input: { type: 'object', properties: { failures: { type: 'integer' } }, required: ['failures'] },
      effect: 'read',
      execute: async (input, context) => {
        const count = (calls.get(context.stepId) ?? 0) + 1;
        calls.set(context.stepId, count);
        if (count <= (input as { failures: number }).failures) {
          throw new ToolError({ code: ErrorCodes.TOOL_COMMAND_FAILED, message: `exited with code 1 (call ${count})` });
        }
        return { calls: count };
      },
    }),
  );
  const store = new MemoryStore();
  return {
    engine: dagEngine({ tools: registry, store, random: () => 0.5, ...(retry ? { retry } : {}) }),
    calls,
    store,
  };
}

describe('retry.on', () => {
  it('retries the listed error codes for that step only, journaling each retry', async () => {
    const { engine, calls, store } = engineWithExits();
    const plan = makePlan([
      {
        id: 'listed',
        tool: 'exits',
        args: { failures: 2 },
        retry: { maxAttempts: 3, initialDelayMs: 1, on: ['E304'] },
      },
      {
        id: 'unlisted',
        tool: 'exits',
        args: { failures: 2 },
        retry: { maxAttempts: 3, initialDelayMs: 1 },
        critical: false,
      },
      {
        id: 'other-code',
        tool: 'exits',
        args: { failures: 1 },
        retry: { maxAttempts: 3, initialDelayMs: 1, on: ['E306'] },
        critical: false,
      },
    ]);
    const result = await engine.run(plan).result;
    const byId = Object.fromEntries(result.steps.map((step) => [step.stepId, step]));
    expect(byId.listed).toMatchObject({ status: 'succeeded', attempt: 3, output: { calls: 3 } });
    expect(byId.unlisted).toMatchObject({ status: 'failed', attempt: 1 });
    expect(byId['other-code']).toMatchObject({ status: 'failed', attempt: 1 });
    expect(calls.get('unlisted')).toBe(1);
    const retries = (await readAll(store, result.runId)).filter((event) => event.type === 'step-retry');
    expect(
      retries.map((event) => [event.stepId, event.attempt, (event as { error: { code: string } }).error.code]),
    ).toEqual([
      ['listed', 1, 'E304'],
      ['listed', 2, 'E304'],
    ]);
  });

  it('gives up after maxAttempts, and an engine-wide retry.on applies to every step', async () => {
    const { engine } = engineWithExits({ initialDelayMs: 1, maxAttempts: 2, on: ['E304'] });
    const plan = makePlan([{ id: 'stubborn', tool: 'exits', args: { failures: 5 } }]);
    const result = await engine.run(plan).result;
    expect(result.steps[0]).toMatchObject({ status: 'failed', attempt: 2 });
    expect(result.steps[0]?.error?.code).toBe('E304');
  });

  it('rejects anything but error codes in the plan (E001 with the path)', () => {
    const validation = validatePlan(
      makePlan([{ id: 'a', tool: 'echo', args: {}, retry: { maxAttempts: 2, on: ['e304'] } }]),
    );
    expect(validation.ok).toBe(false);
    if (validation.ok) return;
    expect(validation.problems[0]?.path).toBe('/steps/0/retry/on/0');
    expect(validation.problems[0]?.message).toContain('E304');
  });
});
