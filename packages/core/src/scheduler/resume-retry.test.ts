import { describe, expect, it } from 'vitest';
import { ToolError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { type Lease, type RunStore, readAll } from '../journal/run-store.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan, until } from '../testing/fixtures.js';
import { FreezableStore } from '../testing/freezable-store.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { permissivePolicy } from './policies/permissive-policy.js';
import { createPolicyEngine } from './policy-engine.js';

const TTL_MS = 300;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process dies right after a failed `step-end` is durable: before its `step-retry` is. */
class DiesAfterFailure extends FreezableStore {
  override async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    await super.append(runId, events, lease);
    if (events.some((event) => event.type === 'step-end' && event.result.status === 'failed')) this.freeze();
  }
}

function flaky(calls: number[]) {
  return new ToolRegistry([
    defineTool({
      name: 'flaky',
      description: 'Fails the first time (retryable), then answers.',
      input: { type: 'object' },
      effect: 'read',
      execute: () => {
        calls.push(calls.length + 1);
        if (calls.length === 1) throw new ToolError({ message: 'not yet', retryable: true });
        return { ok: true };
      },
    }),
  ]);
}

function engineOver(store: RunStore, calls: number[]) {
  const options = { tools: flaky(calls), store, leaseTtlMs: TTL_MS };
  return createPolicyEngine({ policy: permissivePolicy(options), options });
}

describe('a failure whose retry a crash cut off', () => {
  it('is retried on resume, as the session that failed it would have: the run completes', async () => {
    const store = new DiesAfterFailure(new MemoryStore());
    const calls: number[] = [];
    const plan = makePlan([
      { id: 'one', tool: 'flaky', args: {}, retry: { maxAttempts: 3, initialDelayMs: 1 } },
      { id: 'two', tool: 'flaky', args: {}, dependsOn: ['one'] },
    ]);
    const first = engineOver(store, calls).run(plan, { runId: 'run_cut_retry' });
    first.result.catch(() => undefined);
    await until(() => store.frozen, 'the failed end to be durable');
    await pause(TTL_MS + 50);
    const resumed = await engineOver(store.inner, calls).resume('run_cut_retry').result;
    expect(resumed.status).toBe('completed');
    expect(resumed.steps.find((step) => step.stepId === 'one')).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(calls).toEqual([1, 2, 3]);
    const types = (await readAll(store.inner, 'run_cut_retry')).map((event) => event.type);
    // The failed end, then the resume, and the retry the crash had cut off.
    expect(types.slice(types.indexOf('run-resume'))).toContain('step-retry');
  });

  it('stands when it had no attempts left', async () => {
    const store = new DiesAfterFailure(new MemoryStore());
    const calls: number[] = [];
    const plan = makePlan([{ id: 'one', tool: 'flaky', args: {}, retry: { maxAttempts: 1 } }]);
    const first = engineOver(store, calls).run(plan, { runId: 'run_no_attempts' });
    first.result.catch(() => undefined);
    await until(() => store.frozen, 'the failed end to be durable');
    await pause(TTL_MS + 50);
    const resumed = await engineOver(store.inner, calls).resume('run_no_attempts').result;
    expect(resumed.steps[0]).toMatchObject({ stepId: 'one', status: 'failed', attempt: 1 });
    expect(calls).toEqual([1]);
  });
});
