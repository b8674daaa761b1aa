import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunStore, readAll, type StepResult, verifyRun } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { chainPlan, makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';
import { createHarness } from './harness.js';

const require = createRequire(import.meta.url);
const sqliteAvailable = (() => {
  try {
    require.resolve('@stepwise/store-sqlite');
    return true;
  } catch {
    return false;
  }
})();

interface SqliteStoreLike extends RunStore {
  listSteps(runId: string): Promise<{ stepId: string; status: string; attempt: number }[]>;
}

describe.skipIf(!sqliteAvailable)('on the SQLite store', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-sqlite-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('journals every kind of outcome the engine produces, and the projections agree with the result', async () => {
    const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as unknown as {
      createSqliteStore: (options: { path: string }) => SqliteStoreLike;
    };
    const store = createSqliteStore({ path: join(directory, 'runs.db') });
    const harness = createHarness();
    const engine = dagEngine({
      tools: harness.registry,
      store,
      random: () => 0.5,
      retry: { initialDelayMs: 5 },
      approvals: { handler: async (request) => request.stepId !== 'denied' },
      onStepFailed: (step) => (step.id === 'recovered' ? { action: 'skip', reason: 'optional' } : undefined),
    });
    const plan = makePlan([
      { id: 'tree', tool: 'tree', args: {} },
      { id: 'flaky', tool: 'flaky', args: { failures: 1 } },
      { id: 'uses', tool: 'echo', args: { value: '$tree/config/version' }, dependsOn: ['tree', 'flaky'] },
      { id: 'broken', tool: 'fail', args: {}, critical: false },
      { id: 'after-broken', tool: 'echo', args: { value: 1 }, dependsOn: ['broken'] },
      { id: 'denied', tool: 'note', args: { text: 'x' }, requiresApproval: true },
      { id: 'after-denied', tool: 'echo', args: { value: 2 }, dependsOn: ['denied'] },
      { id: 'recovered', tool: 'fail', args: {} },
      { id: 'needs-recovered', tool: 'echo', args: { value: '$recovered' }, dependsOn: ['recovered'] },
      { id: 'after-recovered', tool: 'echo', args: { value: 3 }, dependsOn: ['recovered'] },
    ]);
    try {
      const result = await engine.run(plan).result;
      const statuses = Object.fromEntries(result.steps.map((step: StepResult) => [step.stepId, step.status]));
      expect(statuses).toEqual({
        tree: 'succeeded',
        flaky: 'succeeded',
        uses: 'succeeded',
        broken: 'failed',
        'after-broken': 'skipped',
        denied: 'denied',
        'after-denied': 'skipped',
        recovered: 'skipped',
        'needs-recovered': 'skipped',
        'after-recovered': 'succeeded',
      });
      expect(result.status).toBe('partial');
      const events = await readAll(store, result.runId);
      expect(events.some((event) => event.type === 'step-retry')).toBe(true);
      expect(events.some((event) => event.type === 'recovery-decision')).toBe(true);
      const fold = foldRun(events);
      const projected = await store.listSteps(result.runId);
      for (const step of projected) {
        expect(step.status, step.stepId).toBe(statuses[step.stepId]);
        expect(step.status, step.stepId).toBe(fold.steps.get(step.stepId)?.status);
      }
      expect((await store.getRun(result.runId))?.status).toBe('partial');
      const flakyExecution = result.steps.find((step) => step.stepId === 'flaky')?.executionId as string;
      expect((await store.getExecution(flakyExecution))?.attempt).toBe(2);
    } finally {
      await store.close();
    }
  });

  it("chains a large plan's run-start as the plan is when journaled, a host's change after run() included", async () => {
    const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as unknown as {
      createSqliteStore: (options: { path: string }) => SqliteStoreLike;
    };
    const store = createSqliteStore({ path: join(directory, 'large.db') });
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry, store });
    try {
      // Large enough that its digest's canonical text is kept for the run-start event (64 KB).
      const unchanged = chainPlan(2_000);
      const first = await engine.run(unchanged).result;
      expect((await verifyRun(store, first.runId)).ok).toBe(true);
      const changed = chainPlan(2_000);
      const handle = engine.run(changed);
      (changed.steps[5] as { args: unknown }).args = { message: 'changed after run()' };
      const second = await handle.result;
      const events = await readAll(store, second.runId);
      const start = events[0] as { plan?: typeof changed };
      expect(start.plan?.steps[5]?.args).toEqual({ message: 'changed after run()' });
      expect((await verifyRun(store, second.runId)).ok).toBe(true);
    } finally {
      await store.close();
    }
  });
});
