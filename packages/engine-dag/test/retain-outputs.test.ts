import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AdjustHook,
  defineTool,
  ErrorCodes,
  type Plan,
  type RunResult,
  type RunStore,
  type StepResult,
  ToolRegistry,
} from '@stepwise/core';
import { FreezableStore, MemoryStore, makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { type DagEngineOptions, dagEngine } from '../src/index.js';
import { resumeWhenFree } from './harness.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `make` returns its step id, what it was given, and a 10 KB payload (a read tool). */
const registry = new ToolRegistry([
  defineTool({
    name: 'make',
    description: 'Returns what it was given, with a payload.',
    input: { type: 'object' },
    effect: 'read',
    execute: (input, context) => ({ step: context.stepId, given: input, payload: 'x'.repeat(10_000) }),
  }),
]);

/** r0 → r1 → … each step passing on the previous step's `step` field by reference. */
function referenceChain(length: number): Plan {
  return makePlan(
    Array.from({ length }, (_, index) => ({
      id: `r${index}`,
      tool: 'make',
      args: index === 0 ? {} : { previous: { $ref: `r${index - 1}`, pointer: '/step' } },
      ...(index === 0 ? {} : { dependsOn: [`r${index - 1}`] }),
    })),
  );
}

const byId = (steps: readonly StepResult[]) => new Map(steps.map((step) => [step.stepId, step]));

describe("retainOutputs: 'referenced'", () => {
  it('keeps only the outputs a step that has not ended still references; the journal keeps them all', async () => {
    const sizes: Record<string, number[]> = { all: [], referenced: [] };
    const results: Record<string, RunResult> = {};
    for (const retainOutputs of ['all', 'referenced'] as const) {
      // The adjust hook sees the session's outputs after each step, before its dependents start.
      const adjust: AdjustHook = (_step, _result, context) => {
        sizes[retainOutputs]?.push(context.outputs.size);
        return undefined;
      };
      const store = new MemoryStore();
      results[retainOutputs] = await dagEngine({ tools: registry, store, retainOutputs, adjust }).run(
        referenceChain(50),
      ).result;
      const result = results[retainOutputs] as RunResult;
      expect(result.status).toBe('completed');
      // References resolved the same way whichever outputs were kept.
      expect(byId(result.steps).get('r49')?.output).toMatchObject({ given: { previous: 'r48' } });
      const record = await store.getExecution(byId(result.steps).get('r10')?.executionId as string);
      expect(record?.output).toMatchObject({ step: 'r10', given: { previous: 'r9' } });
    }
    expect(Math.max(...(sizes.referenced as number[]))).toBe(1);
    expect(sizes.all?.at(-1)).toBe(49);
    const referenced = (results.referenced as RunResult).steps;
    // Every step's output was released once the step after it ended; the last step's is the run's result.
    expect(referenced.filter((step) => 'output' in step).map((step) => step.stepId)).toEqual(['r49']);
    expect((results.all as RunResult).steps.every((step) => 'output' in step)).toBe(true);
  });

  it('reads a released output back from the store when a revision adds a reference to it', async () => {
    const adjust: AdjustHook = (step) =>
      step.id === 'r20'
        ? {
            action: 'revise',
            edits: [
              {
                op: 'add',
                step: {
                  id: 'late',
                  tool: 'make',
                  args: { early: { $ref: 'r2', pointer: '/step' } },
                  dependsOn: ['r20'],
                },
              },
            ],
          }
        : undefined;
    for (const durability of ['step', 'batched'] as const) {
      let reads = 0;
      const counting = new (class extends MemoryStore {
        override getExecution(id: string) {
          reads++;
          return super.getExecution(id);
        }
      })();
      const result = await dagEngine({
        tools: registry,
        store: counting,
        retainOutputs: 'referenced',
        durability,
        adjust,
      }).run(referenceChain(30)).result;
      expect(result.status).toBe('completed');
      expect(byId(result.steps).get('late')?.output).toMatchObject({ given: { early: 'r2' } });
      expect(reads).toBe(1);
    }
  });

  it('keeps what a resumed run still references, and resolves it after a crash', async () => {
    const inner = new MemoryStore();
    const store = new FreezableStore(inner);
    let crashed = false;
    const tools = new ToolRegistry([
      ...registry.list(),
      defineTool({
        name: 'crash',
        description: 'The first call freezes the store (the process dies), later calls return their args.',
        input: { type: 'object' },
        effect: 'read',
        execute: (input) => {
          if (crashed) return { given: input };
          crashed = true;
          store.freeze();
          return new Promise(() => undefined);
        },
      }),
    ]);
    const plan = makePlan([
      { id: 'a', tool: 'make', args: {} },
      { id: 'b', tool: 'make', args: {}, dependsOn: ['a'] },
      { id: 'c', tool: 'crash', args: { fromA: { $ref: 'a', pointer: '/step' } }, dependsOn: ['b'] },
    ]);
    const options: DagEngineOptions = { tools, store, retainOutputs: 'referenced', leaseTtlMs: 500 };
    const handle = dagEngine(options).run(plan);
    while (!store.frozen) await pause(5);
    const { result } = await resumeWhenFree({ ...options, store: inner }, handle.runId);
    expect(result.status).toBe('completed');
    expect(byId(result.steps).get('c')?.output).toEqual({ given: { fromA: 'a' } });
    // b's output nobody reads: released in the resumed session too.
    expect('output' in (byId(result.steps).get('b') as StepResult)).toBe(false);
  });

  it('refuses an unknown value with E601 naming the option', () => {
    expect(() => dagEngine({ tools: registry, retainOutputs: 'some' as never })).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID, location: 'retainOutputs' }),
    );
  });
});

const require = createRequire(import.meta.url);
const sqliteAvailable = (() => {
  try {
    require.resolve('@stepwise/store-sqlite');
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!sqliteAvailable)("retainOutputs: 'referenced' on a SQLite file", () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-retain-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('reads a released output back from the file, with batched durability', async () => {
    const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as unknown as {
      createSqliteStore: (options: { path: string }) => RunStore & { ready: Promise<void> };
    };
    const store = createSqliteStore({ path: join(directory, 'runs.db') });
    await store.ready;
    const adjust: AdjustHook = (step) =>
      step.id === 'r40'
        ? {
            action: 'revise',
            edits: [{ op: 'add', step: { id: 'late', tool: 'make', args: { early: '$r3/step' }, dependsOn: ['r40'] } }],
          }
        : undefined;
    try {
      const result = await dagEngine({
        tools: registry,
        store,
        retainOutputs: 'referenced',
        durability: 'batched',
        adjust,
      }).run(referenceChain(60)).result;
      expect(result.status).toBe('completed');
      expect(byId(result.steps).get('late')?.output).toMatchObject({ given: { early: 'r3' } });
    } finally {
      await store.close();
    }
  });
});
