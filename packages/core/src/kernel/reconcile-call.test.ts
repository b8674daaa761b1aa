import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { FreezableStore } from '../testing/freezable-store.js';
import { defineTool, type Reconciliation } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';

const TTL_MS = 500;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(5);
  }
}

/**
 * A payment ledger keyed by the call's idempotency key, and a `charge` tool over it. `crash` says
 * where the first process dies: after the effect, or before it. `reconcile` answers from the ledger,
 * or as `answer` forces.
 */
function ledgerTools(
  ledger: Map<string, number>,
  options: { crash?: 'after-effect' | 'before-effect'; answer?: () => Reconciliation<{ receipt: string }> },
) {
  const calls: { executed: string[]; reconciled: string[] } = { executed: [], reconciled: [] };
  const tools = new ToolRegistry([
    defineTool({
      name: 'charge',
      description: 'Charges an amount once per idempotency key (not idempotent by itself).',
      input: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
      output: { type: 'object', properties: { receipt: { type: 'string' } }, required: ['receipt'] },
      effect: 'write',
      async execute(input: { amount: number }, context) {
        calls.executed.push(context.idempotencyKey);
        if (options.crash === 'before-effect') return new Promise<never>(() => undefined);
        ledger.set(context.idempotencyKey, input.amount);
        if (options.crash === 'after-effect') return new Promise<never>(() => undefined);
        return { receipt: context.idempotencyKey };
      },
      reconcile(context) {
        calls.reconciled.push(context.idempotencyKey);
        if (options.answer) return options.answer();
        const amount = ledger.get(context.idempotencyKey);
        if (amount === undefined) return { status: 'not-done' };
        expect(context.input).toEqual({ amount });
        return { status: 'done', output: { receipt: context.idempotencyKey } };
      },
    }),
  ]);
  return { tools, calls };
}

function engineOver(store: RunStore, tools: ToolRegistry) {
  const options = { tools, store, leaseTtlMs: TTL_MS };
  return createPolicyEngine({ policy: permissivePolicy(options), options });
}

/** Runs `charge` under a store that freezes once the call is made (the process dies), then resumes it elsewhere. */
async function crashThenResume(
  runId: string,
  crash: 'after-effect' | 'before-effect',
  answer?: () => Reconciliation<{ receipt: string }>,
) {
  const inner = new MemoryStore();
  const frozen = new FreezableStore(inner);
  const ledger = new Map<string, number>();
  const first = ledgerTools(ledger, { crash });
  const plan = makePlan([{ id: 'pay', tool: 'charge', args: { amount: 42 } }]);
  engineOver(frozen, first.tools)
    .run(plan, { runId })
    .result.catch(() => undefined);
  await until(() => first.calls.executed.length === 1, 'the charge to start');
  frozen.freeze();
  await pause(TTL_MS + 100);
  const second = ledgerTools(ledger, answer ? { answer } : {});
  const result = await engineOver(inner, second.tools).resume(runId).result;
  const events = await readAll(inner, runId);
  return { result, events, ledger, first: first.calls, second: second.calls };
}

const ofType = <T extends RunEvent['type']>(events: readonly RunEvent[], type: T) =>
  events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type);

describe('reconcile: a non-idempotent call whose outcome a crash left unknown', () => {
  it('ends the step succeeded with the output reconcile gives when the effect happened, without running it again', async () => {
    const { result, events, ledger, first, second } = await crashThenResume('run_done', 'after-effect');
    expect(result.status).toBe('completed');
    const key = first.executed[0];
    expect(result.steps[0]).toMatchObject({ status: 'succeeded', attempt: 1, output: { receipt: key } });
    expect(second).toEqual({ executed: [], reconciled: [key] });
    expect([...ledger.entries()]).toEqual([[key, 42]]);
    expect(ofType(events, 'run-resume')[0]?.interrupted).toEqual([{ stepId: 'pay', action: 'reconcile' }]);
    const results = ofType(events, 'tool-result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ status: 'succeeded', reconciled: true, output: { receipt: key } });
  });

  it('runs the step again (a new attempt, the same idempotency key) when the effect did not happen', async () => {
    const { result, ledger, first, second } = await crashThenResume('run_not_done', 'before-effect');
    expect(result.status).toBe('completed');
    expect(result.steps[0]).toMatchObject({ status: 'succeeded', attempt: 2 });
    const key = first.executed[0];
    expect(second).toEqual({ executed: [key], reconciled: [key] });
    expect([...ledger.entries()]).toEqual([[key, 42]]);
  });

  it('fails the step as interrupted (E309) when reconcile cannot tell, or throws', async () => {
    const unknown = await crashThenResume('run_unknown', 'after-effect', () => ({
      status: 'unknown',
      reason: 'the ledger is unreachable',
    }));
    expect(unknown.result.status).toBe('failed');
    expect(unknown.result.steps[0]?.error).toMatchObject({ code: ErrorCodes.STEP_INTERRUPTED, retryable: false });
    expect(unknown.result.steps[0]?.error?.message).toContain('the ledger is unreachable');
    expect(unknown.second.executed).toEqual([]);

    const thrown = await crashThenResume('run_throws', 'after-effect', () => {
      throw new Error('connection refused');
    });
    expect(thrown.result.steps[0]?.error).toMatchObject({ code: ErrorCodes.STEP_INTERRUPTED });
    expect(thrown.result.steps[0]?.error?.message).toContain('connection refused');
    expect(thrown.second.executed).toEqual([]);
  });

  it('fails the step E305 when the output reconcile gives does not match the tool’s output schema', async () => {
    const { result, events } = await crashThenResume('run_bad_output', 'after-effect', () => ({
      status: 'done',
      output: { receipt: 7 } as unknown as { receipt: string },
    }));
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.TOOL_OUTPUT_INVALID });
    expect(ofType(events, 'tool-result')[0]).toMatchObject({ status: 'failed', reconciled: true });
  });
});
