import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import type { RunEndEvent, StepEndEvent } from '../journal/events.js';
import { readAll } from '../journal/run-store.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { cancelRun } from './cancel-run.js';
import { pendingApprovals } from './respond.js';

function engineOn(store: MemoryStore, leaseTtlMs: number) {
  const { registry, log } = createTestTools();
  const options = { tools: registry, store, leaseTtlMs };
  return { engine: createPolicyEngine({ policy: permissivePolicy(options), options }), log };
}

const plan = makePlan([
  { id: 'wait', tool: 'sleep', args: { ms: 60_000 } },
  { id: 'after', tool: 'echo', args: { value: 1 }, dependsOn: ['wait'] },
]);

describe('cancelRun', () => {
  it('cancels a run another handle holds at its next lease renewal: the tool is aborted, run-end names who', async () => {
    const store = new MemoryStore();
    const { engine } = engineOn(store, 600);
    const handle = engine.run(plan, { runId: 'run_cancel_live' });
    while ((await store.getRun('run_cancel_live'))?.stepCounts.running !== 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const asked = Date.now();
    const outcome = await cancelRun(store, 'run_cancel_live', { by: 'ops', reason: 'deploy frozen' });
    expect(outcome.outcome).toBe('requested');
    const result = await handle.result;
    // Renewed every 200 ms: well before the 60 s sleep would have ended.
    expect(Date.now() - asked).toBeLessThan(3_000);
    expect(result.status).toBe('cancelled');
    const events = await readAll(store, 'run_cancel_live');
    const ends = events.filter((event): event is StepEndEvent => event.type === 'step-end');
    expect(ends.map((end) => [end.stepId, end.result.status])).toEqual([
      ['wait', 'cancelled'],
      ['after', 'cancelled'],
    ]);
    expect(ends[0]?.result.error?.message).toBe('cancelled: ops asked to cancel the run: deploy frozen');
    const end = events.at(-1) as RunEndEvent;
    expect([end.status, end.by, end.reason]).toEqual(['cancelled', 'ops', 'deploy frozen']);
    // The request ended with the run: the run continues on resume as any cancelled run does.
    await expect(cancelRun(store, 'run_cancel_live', { by: 'ops' })).rejects.toMatchObject({
      code: ErrorCodes.RUN_ENDED,
      location: 'run_cancel_live',
    });
  });

  it('ends a waiting run itself (no process holds it); a resume then continues it as any cancelled run', async () => {
    const store = new MemoryStore();
    const { registry } = createTestTools();
    const options = { tools: registry, store, approvals: { policy: { tools: { note: 'pause' as const } } } };
    const engine = createPolicyEngine({ policy: permissivePolicy(options), options });
    const waiting = makePlan([{ id: 'ask', tool: 'note', args: { text: 'x' } }]);
    expect((await engine.run(waiting, { runId: 'run_cancel_waiting' }).result).status).toBe('waiting');
    const outcome = await cancelRun(store, 'run_cancel_waiting', { by: 'alice' });
    expect(outcome.outcome === 'cancelled' && outcome.result.status).toBe('cancelled');
    expect(await pendingApprovals(store, 'run_cancel_waiting')).toEqual([]);
    const events = await readAll(store, 'run_cancel_waiting');
    const end = events.at(-1) as RunEndEvent;
    expect([end.type, end.status, end.by, end.reason]).toEqual(['run-end', 'cancelled', 'alice', undefined]);
    expect(events.at(-2)).toMatchObject({ type: 'step-end', stepId: 'ask', result: { status: 'cancelled' } });
    // As any cancelled run: resume continues it, and the step asks again.
    const resumed = engine.resume('run_cancel_waiting');
    expect((await resumed.result).status).toBe('waiting');
    expect((await readAll(store, 'run_cancel_waiting')).some((event) => event.type === 'run-continue')).toBe(true);
  });
});
