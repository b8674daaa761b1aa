import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { type Lease, type RunStore, readAll } from '../journal/run-store.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { type StoreHarness, uniqueRunId } from './conformance-support.js';
import { makePlan } from './fixtures.js';
import { FreezableStore } from './freezable-store.js';

/** The lease of the run under test: short, so a takeover happens within the test. */
const TTL_MS = 500;
/** What the waiting tool waits before its effect: far longer than the lease lives unrenewed. */
const WAIT_MS = 6 * TTL_MS;

/** Lease loss is a cancellation: it reaches the tools of the run, under every store. */
export function fencingCases(harness: StoreHarness): void {
  describe('store conformance: fencing', () => {
    it('aborts a waiting tool when another owner takes its run, performs no effect and starts no queued step', {
      timeout: 30_000,
    }, async () => {
      const store = await harness.create();
      const other = harness.connect ? await harness.connect(store) : store;
      try {
        await lostLeaseStopsTheRun(store, other);
      } finally {
        if (other !== store) await other.close();
        await store.close();
      }
    });
  });
}

/** What the waiting tool saw: which steps started, which performed their effect, when and why its wait was ended. */
interface Observed {
  readonly started: string[];
  readonly effects: string[];
  abortedAt?: number;
  abortReason?: unknown;
}

/** `wait_then_write`: waits `WAIT_MS` honouring its signal, then performs its effect (a counted write). */
function waitingTools(observed: Observed, onStart: () => void): ToolRegistry {
  return new ToolRegistry([
    defineTool({
      name: 'wait_then_write',
      description: 'Waits, then writes (not idempotent).',
      input: { type: 'object' },
      effect: 'write',
      execute: (_input, context) =>
        new Promise((resolve, reject) => {
          observed.started.push(context.stepId);
          const timer = setTimeout(() => {
            observed.effects.push(context.stepId);
            resolve({});
          }, WAIT_MS);
          context.signal.addEventListener(
            'abort',
            () => {
              observed.abortedAt = Date.now();
              observed.abortReason = context.signal.reason;
              clearTimeout(timer);
              reject(context.signal.reason);
            },
            { once: true },
          );
          onStart();
        }),
    }),
  ]);
}

/** Polls until `owner` holds the run (its lease expired); returns the lease and when it was taken. */
async function takeOver(store: RunStore, runId: string, owner: string): Promise<{ lease: Lease; at: number }> {
  const deadline = Date.now() + 10 * TTL_MS;
  for (;;) {
    const lease = await store.acquireLease(runId, owner, 60_000);
    if (lease) return { lease, at: Date.now() };
    if (Date.now() > deadline) throw new Error(`${owner} could not take run ${runId} within ${10 * TTL_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function lostLeaseStopsTheRun(store: RunStore, other: RunStore): Promise<void> {
  const runId = uniqueRunId();
  const observed: Observed = { started: [], effects: [] };
  let toolStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    toolStarted = resolve;
  });
  const worker = new FreezableStore(store);
  const tools = waitingTools(observed, () => toolStarted());
  const options = { tools, store: worker, leaseTtlMs: TTL_MS, owner: 'first' };
  const engine = createPolicyEngine({ policy: permissivePolicy(options), options });
  const plan = makePlan([
    { id: 'wait', tool: 'wait_then_write', args: {} },
    { id: 'queued', tool: 'wait_then_write', args: {}, dependsOn: ['wait'] },
  ]);
  const handle = engine.run(plan, { runId });
  const outcome = handle.result.then(
    () => undefined,
    (error: unknown) => error,
  );
  await started;
  worker.freeze();
  const taken = await takeOver(other, runId, 'second');

  const error = await Promise.race([
    outcome,
    new Promise((resolve) => setTimeout(resolve, 4 * TTL_MS, 'the run did not stop after losing its lease')),
  ]);
  expect(StepwiseError.isInstance(error) && error.code).toBe(ErrorCodes.LEASE_CONFLICT);
  expect((error as Error).message).toContain(runId);
  expect(observed.abortedAt, 'the waiting tool was never aborted').toBeDefined();
  expect((observed.abortedAt as number) - taken.at).toBeLessThanOrEqual(2 * TTL_MS);
  expect(StepwiseError.isInstance(observed.abortReason) && observed.abortReason.code).toBe(ErrorCodes.LEASE_CONFLICT);
  // Long enough for the effect to have happened, had the tool gone on waiting.
  await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
  expect(observed.effects).toEqual([]);
  expect(observed.started).toEqual(['wait']);

  const events = await readAll(other, runId);
  expect(events.some((event) => event.type === 'step-start' && event.stepId === 'queued')).toBe(false);
  expect(events.some((event) => event.type === 'tool-result')).toBe(false);
  // The new owner writes on.
  await other.append(runId, [resumeEvent(runId, (events.at(-1)?.seq ?? 0) + 1)], taken.lease);
  await other.releaseLease(taken.lease);
}

function resumeEvent(runId: string, seq: number): RunEvent {
  const interrupted = [{ stepId: 'wait', action: 'fail' as const }];
  return { type: 'run-resume', owner: 'second', interrupted, runId, seq, at: new Date().toISOString() };
}
