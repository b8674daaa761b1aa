import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { type Lease, readAll } from '../journal/run-store.js';
import type { Step } from '../plan/plan-schema.js';
import type { EngineOptions } from '../run/engine-options.js';
import { reopenRun, startRun } from '../run/run-session.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan, until } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';

const TTL_MS = 300;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const stale = (runId: string) => new StepwiseError(ErrorCodes.LEASE_CONFLICT, `lease on run ${runId} is stale`);

/** A MemoryStore whose renewals and appends a test can make fail from some moment on, and whose reads it can slow down. */
class ScriptedStore extends MemoryStore {
  refuseRenewals = false;
  refuseAppends = false;
  readDelayMs = 0;
  override async *read(runId: string, afterSeq?: number): AsyncIterable<RunEvent> {
    if (this.readDelayMs > 0) await pause(this.readDelayMs);
    yield* super.read(runId, afterSeq);
  }
  override renewLease(lease: Lease): Promise<Lease> {
    return this.refuseRenewals ? Promise.reject(stale(lease.runId)) : super.renewLease(lease);
  }
  override append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    return this.refuseAppends ? Promise.reject(stale(runId)) : super.append(runId, events, lease);
  }
}

/** What the tools saw: steps whose body started, steps that performed their effect, how their waits ended. */
interface Seen {
  readonly started: string[];
  readonly effects: string[];
  readonly aborts: { stepId: string; at: number; reason: unknown }[];
}

/**
 * `wait` waits `ms` honouring its signal, then performs its effect; `deaf` does the same but ignores
 * its signal; `busy` blocks the thread for `ms` (no timer can fire meanwhile). None is idempotent.
 */
function tools(seen: Seen): ToolRegistry {
  const input = z.object({ ms: z.number() });
  const waitFor = (ms: number, stepId: string, signal?: AbortSignal) =>
    new Promise((resolve, reject) => {
      const onAbort = () => {
        seen.aborts.push({ stepId, at: Date.now(), reason: signal?.reason });
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        seen.effects.push(stepId);
        resolve({});
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  return new ToolRegistry([
    defineTool({
      name: 'wait',
      description: 'Waits, then writes.',
      input,
      effect: 'write',
      execute: ({ ms }, context) => {
        seen.started.push(context.stepId);
        return waitFor(ms, context.stepId, context.signal);
      },
    }),
    defineTool({
      name: 'deaf',
      description: 'Waits ignoring its signal, then writes.',
      input,
      effect: 'write',
      execute: ({ ms }, context) => {
        seen.started.push(context.stepId);
        return waitFor(ms, context.stepId);
      },
    }),
    defineTool({
      name: 'busy',
      description: 'Keeps the thread busy, then writes.',
      input,
      effect: 'write',
      execute: ({ ms }, context) => {
        seen.started.push(context.stepId);
        const until = Date.now() + ms;
        while (Date.now() < until) {
          // Busy on purpose: a stalled process, whose timers cannot fire.
        }
        seen.effects.push(context.stepId);
        return {};
      },
    }),
  ]);
}

function setup(steps: Step[], options: Partial<EngineOptions> = {}) {
  const store = new ScriptedStore();
  const seen: Seen = { started: [], effects: [], aborts: [] };
  const engineOptions = { tools: tools(seen), store, leaseTtlMs: TTL_MS, ...options };
  const engine = createPolicyEngine({ policy: permissivePolicy(engineOptions), options: engineOptions });
  const handle = engine.run(makePlan(steps), { runId: 'run_fenced' });
  const failure = handle.result.then(
    (result) => new Error(`the run ended ${result.status} instead of failing`),
    (error: unknown) => error,
  );
  return { store, seen, handle, failure };
}

function expectLeaseConflict(error: unknown, runId = 'run_fenced'): void {
  expect(StepwiseError.isInstance(error), String(error)).toBe(true);
  expect((error as StepwiseError).code).toBe(ErrorCodes.LEASE_CONFLICT);
  expect((error as StepwiseError).message).toContain(runId);
}

const chain = (first: string, ms: number): Step[] => [
  { id: 'first', tool: first, args: { ms } },
  { id: 'queued', tool: 'wait', args: { ms: 0 }, dependsOn: ['first'] },
];

describe('a lost lease stops the run', () => {
  it('aborts the running tool with E501 as soon as a renewal is refused, and starts nothing more', async () => {
    const { store, seen, failure } = setup(chain('wait', 5_000));
    await until(() => seen.started.length === 1, 'the tool to start');
    store.refuseRenewals = true;
    const refusedAt = Date.now();
    const error = await failure;
    expectLeaseConflict(error);
    expect(seen.aborts).toHaveLength(1);
    // The next renewal (a third of the TTL away) finds the lease gone: well before the TTL is over.
    expect((seen.aborts[0]?.at ?? Number.POSITIVE_INFINITY) - refusedAt).toBeLessThan(TTL_MS);
    expectLeaseConflict(seen.aborts[0]?.reason);
    expect(seen.started).toEqual(['first']);
    expect(seen.effects).toEqual([]);
    const types = (await readAll(store, 'run_fenced')).map((event) => event.type);
    expect(types).toEqual(['run-start', 'step-start', 'tool-call']);
  });

  it('aborts the tools in flight with E501 when an append is refused with E501', async () => {
    const { store, seen, failure } = setup([
      { id: 'long', tool: 'wait', args: { ms: 5_000 } },
      { id: 'short', tool: 'wait', args: { ms: 50 } },
      { id: 'queued', tool: 'wait', args: { ms: 0 }, dependsOn: ['short'] },
    ]);
    await until(() => seen.started.length === 2, 'both tools to start');
    store.refuseAppends = true;
    expectLeaseConflict(await failure);
    // `short` ended and its end was refused: `long` is aborted with that error, `queued` never starts.
    expect(seen.aborts.map((abort) => abort.stepId)).toEqual(['long']);
    expectLeaseConflict(seen.aborts[0]?.reason);
    expect(seen.started.sort()).toEqual(['long', 'short']);
  });

  it('refuses the result of a tool that ignores its signal, and the run ends at once', async () => {
    const { store, seen, failure } = setup(chain('deaf', 1_000));
    await until(() => seen.started.length === 1, 'the tool to start');
    store.refuseRenewals = true;
    const refusedAt = Date.now();
    expectLeaseConflict(await failure);
    expect(Date.now() - refusedAt).toBeLessThan(TTL_MS);
    await pause(1_100);
    // The deaf tool did its effect (nothing can stop that), but nothing of it reached the journal.
    expect(seen.effects).toEqual(['first']);
    expect(seen.started).toEqual(['first']);
    const events = await readAll(store, 'run_fenced');
    expect(events.some((event) => event.type === 'tool-result' || event.type === 'step-end')).toBe(false);
  });

  it('starts no tool once the lease outlived its time unrenewed, before the store is even asked', async () => {
    // `busy` holds the thread past the TTL: no renewal is sent, no timer fires; the next step must not start.
    const { store, seen, failure } = setup(chain('busy', TTL_MS + 100));
    const error = await failure;
    expectLeaseConflict(error);
    expect((error as Error).message).toContain(`not renewed within its ${TTL_MS} ms`);
    expect(seen.started).toEqual(['first']);
    const events = await readAll(store, 'run_fenced');
    expect(events.some((event) => event.type === 'tool-result')).toBe(false);
  });

  it('ends an approval wait whose handler ignores its signal, and journals no call', async () => {
    let asked = 0;
    const { store, seen, failure } = setup([{ id: 'gated', tool: 'wait', args: { ms: 0 }, requiresApproval: true }], {
      approvals: {
        handler: () => {
          asked++;
          return new Promise(() => undefined);
        },
      },
    });
    await until(() => asked === 1, 'the approval request');
    store.refuseRenewals = true;
    expectLeaseConflict(await failure);
    expect(seen.started).toEqual([]);
    const types = (await readAll(store, 'run_fenced')).map((event) => event.type);
    expect(types).toEqual(['run-start', 'step-start', 'approval-request']);
  });
});

describe('reopening a run takes its time without losing the lease', () => {
  async function ended(store: ScriptedStore, runId: string) {
    const plan = makePlan([{ id: 'one', tool: 'wait', args: { ms: 0 } }]);
    const journal = await startRun({ store, runId, plan, engine: 'test', leaseTtlMs: TTL_MS });
    await journal.close();
  }

  it('renews a lease the journal read outlasted before the run goes on', async () => {
    const store = new ScriptedStore();
    await ended(store, 'run_slow_read');
    store.readDelayMs = TTL_MS + 100;
    const { journal } = await reopenRun({ store, runId: 'run_slow_read', leaseTtlMs: TTL_MS });
    expect(journal.fencedBy()).toBeUndefined();
    await journal.record({ type: 'run-resume', owner: 'me', interrupted: [] });
    await journal.close();
  });

  it('gives up (E501) when another owner took the run while it was being read', async () => {
    const store = new ScriptedStore();
    await ended(store, 'run_taken');
    store.readDelayMs = TTL_MS + 100;
    const reopening = reopenRun({ store, runId: 'run_taken', leaseTtlMs: TTL_MS }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await pause(TTL_MS + 20);
    expect(await store.acquireLease('run_taken', 'other', 60_000)).toBeDefined();
    expectLeaseConflict(await reopening, 'run_taken');
  });
});
