import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolResultEvent } from '../journal/events.js';
import { readAll } from '../journal/run-store.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { defineTool, type ToolContext } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { deriveIdempotencyKey } from './idempotency-key.js';

/** `charge` fails (retryably) on its first `failures` calls per step, and records every key and attempt it saw. */
function chargeTool(failures: number) {
  const seen: { stepId: string; attempt: number; executionId: string; key: string }[] = [];
  const tool = defineTool({
    name: 'charge',
    description: 'Charges once per key.',
    input: z.object({ amount: z.number() }),
    effect: 'network',
    execute: (_input, context) => {
      seen.push({
        stepId: context.stepId,
        attempt: context.attempt,
        executionId: context.executionId,
        key: context.idempotencyKey,
      });
      const calls = seen.filter((entry) => entry.stepId === context.stepId).length;
      if (calls <= failures) throw new Error('the provider timed out');
      return { key: context.idempotencyKey };
    },
  });
  return { registry: new ToolRegistry([tool]), seen };
}

function engineFor(registry: ToolRegistry, store = new MemoryStore()) {
  const options = {
    tools: registry,
    store,
    approvals: { policy: { effects: { network: 'auto' as const } } },
    retry: { maxAttempts: 3, initialDelayMs: 1, on: ['E300' as const] },
  };
  return createPolicyEngine({ policy: permissivePolicy(options), options });
}

describe('ctx.idempotencyKey', () => {
  it('is the same for every attempt of one step, and differs between steps and runs', async () => {
    const { registry, seen } = chargeTool(2);
    const plan = makePlan([
      { id: 'pay', tool: 'charge', args: { amount: 5 } },
      { id: 'refund', tool: 'charge', args: { amount: -5 } },
    ]);
    const store = new MemoryStore();
    const result = await engineFor(registry, store).run(plan, { runId: 'run_keys' }).result;
    expect(result.status).toBe('completed');
    const pay = seen.filter((entry) => entry.stepId === 'pay');
    const refund = seen.filter((entry) => entry.stepId === 'refund');
    expect(pay.map((entry) => entry.attempt)).toEqual([1, 2, 3]);
    // Three attempts, three execution ids, one key.
    expect(new Set(pay.map((entry) => entry.executionId)).size).toBe(3);
    expect(new Set(pay.map((entry) => entry.key))).toEqual(new Set([deriveIdempotencyKey('run_keys', 'pay', 0)]));
    expect(new Set(refund.map((entry) => entry.key)).size).toBe(1);
    expect(refund[0]?.key).not.toBe(pay[0]?.key);
    expect(pay[0]?.key).toMatch(/^idem_[0-9a-f]{32}$/);
    // The key is the tool's to use (here, its output); it is not journaled on its own.
    const results = (await readAll(store, 'run_keys')).filter(
      (event): event is ToolResultEvent => event.type === 'tool-result' && event.status === 'succeeded',
    );
    expect(results.map((event) => event.output)).toEqual([{ key: pay[0]?.key }, { key: refund[0]?.key }]);

    const again = chargeTool(0);
    await engineFor(again.registry).run(plan, { runId: 'run_other' }).result;
    expect(again.seen.find((entry) => entry.stepId === 'pay')?.key).not.toBe(pay[0]?.key);
  });

  it('changes with the plan revision and not with anything else', () => {
    const key = deriveIdempotencyKey('run_a', 'pay', 0);
    expect(deriveIdempotencyKey('run_a', 'pay', 0)).toBe(key);
    expect(deriveIdempotencyKey('run_a', 'pay', 1)).not.toBe(key);
    expect(deriveIdempotencyKey('run_b', 'pay', 0)).not.toBe(key);
    // The separator keeps ("run_a", "pay") and ("run_ap", "ay") apart.
    expect(deriveIdempotencyKey('run_ap', 'ay', 0)).not.toBe(key);
  });

  it('is an own, enumerable property whose getter every call shares, so a context holds no getter closure', async () => {
    const contexts: ToolContext[] = [];
    const tool = defineTool({
      name: 'look',
      description: 'Keeps its context.',
      input: z.object({}),
      effect: 'read',
      execute: (_input, context) => {
        contexts.push(context);
        return {};
      },
    });
    const engine = engineFor(new ToolRegistry([tool]));
    const plan = makePlan([
      { id: 'first', tool: 'look', args: {} },
      { id: 'second', tool: 'look', args: {} },
    ]);
    await engine.run(plan, { runId: 'run_one' }).result;
    await engine.run(plan, { runId: 'run_two' }).result;
    expect(contexts).toHaveLength(4);
    const getters = contexts.map((context) => Object.getOwnPropertyDescriptor(context, 'idempotencyKey'));
    for (const descriptor of getters) expect(descriptor).toMatchObject({ enumerable: true, set: undefined });
    // A `get` in an object literal makes a closure per call over the whole run; V8 keeps it in an
    // accessor pair in the old generation, and scavenges kept finished runs alive through it.
    expect(new Set(getters.map((descriptor) => descriptor?.get)).size).toBe(1);
    expect(contexts.map((context) => context.idempotencyKey)).toEqual([
      deriveIdempotencyKey('run_one', 'first', 0),
      deriveIdempotencyKey('run_one', 'second', 0),
      deriveIdempotencyKey('run_two', 'first', 0),
      deriveIdempotencyKey('run_two', 'second', 0),
    ]);
    // A copy of a context carries the key as a value, as it did with a getter of its own.
    expect({ ...contexts[1] }.idempotencyKey).toBe(deriveIdempotencyKey('run_one', 'second', 0));
    expect(Object.keys(contexts[0] as object)).toContain('idempotencyKey');
  });
});
