import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes, StepwiseError, ToolError } from '../errors.js';
import type { ToolResultEvent } from '../journal/events.js';
import { readAll } from '../journal/run-store.js';
import { verifyRun } from '../journal/verify-run.js';
import type { Plan } from '../plan/plan-schema.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';

// What a tool hands back is the tool's business, and may be anything: these values must end the
// step with a typed error or as plain data, and never leave a run unfinished or its journal unverifiable.

/** Runs a one-step plan of a tool that does `execute`, on its own MemoryStore. */
async function runTool(execute: () => unknown, step: Partial<Plan['steps'][number]> = {}) {
  const store = new MemoryStore();
  const tools = new ToolRegistry([
    defineTool({
      name: 'hostile',
      description: 'hands back what it is told',
      input: z.object({}),
      effect: 'read',
      execute,
    }),
  ]);
  const options = { tools, store };
  const engine = createPolicyEngine({ policy: permissivePolicy(options), options });
  const plan: Plan = { id: 'p', steps: [{ id: 'a', tool: 'hostile', args: {}, ...step }] };
  const result = await engine.run(plan).result;
  const events = await readAll(store, result.runId);
  const toolResults = events.filter((event): event is ToolResultEvent => event.type === 'tool-result');
  return { store, result, events, toolResults, step: result.steps[0] };
}

/** The run ended, its lease is free for another owner, and its journal verifies. */
async function expectFinished({ store, result, events }: Awaited<ReturnType<typeof runTool>>) {
  expect(events.at(-1)?.type).toBe('run-end');
  expect(await store.acquireLease(result.runId, 'someone else', 1_000)).toBeDefined();
  expect(await verifyRun(store, result.runId)).toMatchObject({ ok: true });
}

describe('a tool output JSON cannot hold', () => {
  const throwingToJson = {
    toJSON() {
      throw new Error('no JSON today');
    },
  };
  it.each([
    ['a BigInt', { id: 10n }, 'BigInt'],
    ['a toJSON that throws', { value: throwingToJson }, 'no JSON today'],
  ])('(%s) fails its step with E305, and the run still ends with its journal whole', async (_name, output, reason) => {
    const run = await runTool(() => output);
    expect(run.result.status).toBe('failed');
    expect(run.step?.error).toMatchObject({ code: ErrorCodes.TOOL_OUTPUT_INVALID, location: 'a/output' });
    expect(run.step?.error?.message).toContain('it cannot be kept as JSON data');
    expect(run.step?.error?.message).toContain(reason);
    expect(run.toolResults).toHaveLength(1);
    await expectFinished(run);
  });
});

describe('a tool output is read once, as the tool returned it', () => {
  it('keeps what the tool returned, not what its object became afterwards', async () => {
    const output = { y: 'original', list: [1, 2] };
    const run = await runTool(() => {
      queueMicrotask(() => {
        output.y = 'changed after the tool returned';
        output.list.push(3);
      });
      return output;
    });
    output.y = 'changed after the run';
    expect(run.step?.output).toEqual({ y: 'original', list: [1, 2] });
    expect(run.toolResults[0]?.output).toEqual({ y: 'original', list: [1, 2] });
    await expectFinished(run);
  });

  it('reads a toJSON once, so a value that differs at every read still verifies', async () => {
    let reads = 0;
    const run = await runTool(() => ({
      toJSON: () => {
        reads++;
        return { read: reads };
      },
    }));
    expect(reads).toBe(1);
    expect(run.step?.output).toEqual({ read: 1 });
    expect(run.toolResults[0]?.output).toEqual({ read: 1 });
    await expectFinished(run);
  });

  it('keeps JSON data only: a Date as its text, a Map as an object, undefined members left out', async () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    const run = await runTool(() => ({ at, map: new Map([['k', 1]]), gone: undefined, list: [undefined, Number.NaN] }));
    expect(run.step?.output).toEqual({ at: '2026-01-02T03:04:05.000Z', map: {}, list: [null, null] });
    expect(Object.hasOwn(run.step?.output as object, 'gone')).toBe(false);
    await expectFinished(run);
  });
});

describe('an error a tool throws, with fields of any kind', () => {
  class OddError extends ToolError {
    constructor(fields: Record<string, unknown>) {
      super({ message: 'odd' });
      Object.assign(this, fields);
    }
  }

  it('journals a code that is not E and digits as E300, and a retryable that is not true as false', async () => {
    for (const fields of [{ code: {} }, { code: 'NOPE' }, { code: 'E12x' }]) {
      const run = await runTool(() => {
        throw new OddError(fields);
      });
      expect(run.step?.error).toEqual({ code: ErrorCodes.TOOL_FAILED, message: 'odd', retryable: false });
    }
    let calls = 0;
    const retried = await runTool(
      () => {
        calls++;
        throw new OddError({ code: 'E350', retryable: 'yes', location: { not: 'a string' } });
      },
      { retry: { maxAttempts: 3, initialDelayMs: 1 } },
    );
    expect(calls).toBe(1);
    expect(retried.step?.error).toEqual({ code: 'E350', message: 'odd', retryable: false });
    expect(retried.toolResults[0]?.error).toEqual(retried.step?.error);
    await expectFinished(retried);
  });

  it('leaves out details JSON cannot hold, and says so', async () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const [details, reason] of [
      [{ id: 1n }, 'BigInt'],
      [cycle, 'contains itself'],
      [{ list: Object.assign([], { length: 2 ** 32 - 1 }) }, 'more than 10,000,000 values'],
    ] as const) {
      const run = await runTool(() => {
        throw new ToolError({ message: 'with details', details: details as Record<string, unknown> });
      });
      expect(run.step?.error?.code).toBe(ErrorCodes.TOOL_FAILED);
      expect(run.step?.error?.message).toMatch(
        new RegExp(`^with details \\(its details were left out: .*${reason}`, 'i'),
      );
      expect(run.step?.error?.details).toBeUndefined();
      await expectFinished(run);
    }
  });

  it('journals the result of a call whose thrown value cannot even be read (a proxy whose traps throw)', async () => {
    const trap = () => {
      throw new Error('trap');
    };
    const thrown = new Proxy(new StepwiseError(ErrorCodes.TOOL_FAILED, 'x'), { get: trap, getPrototypeOf: trap });
    const run = await runTool(() => {
      throw thrown;
    });
    expect(run.step?.error).toEqual({
      code: ErrorCodes.TOOL_FAILED,
      message: '(a thrown object that cannot be shown as text)',
      retryable: false,
    });
    expect(run.toolResults).toHaveLength(1);
    const execution = await run.store.getExecution(run.step?.executionId as string);
    expect(execution?.status).toBe('failed');
    await expectFinished(run);
  });

  it('describes an error whose toJSON does not give an object by its message', async () => {
    for (const answer of [null, 'not an error']) {
      const run = await runTool(() => {
        throw new OddError({ toJSON: () => answer });
      });
      expect(run.step?.error).toEqual({ code: ErrorCodes.TOOL_FAILED, message: 'odd', retryable: false });
    }
  });
});
