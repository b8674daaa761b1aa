import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { defineTool, type Reconciliation } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { type StoreHarness, uniqueRunId } from './conformance-support.js';
import { eventsOfType, makePlan, until } from './fixtures.js';
import { FreezableStore } from './freezable-store.js';

/** The lease of the crashed run: short, so the resume can take it over within the test. */
const TTL_MS = 500;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where the first process dies: after the charge's effect, or before it. */
export type CrashPoint = 'after-effect' | 'before-effect';

/** Which idempotency keys `charge` ran for, and which it was asked to reconcile. */
export interface LedgerCalls {
  readonly executed: string[];
  readonly reconciled: string[];
}

/**
 * A payment ledger keyed by the call's idempotency key, and a `charge` tool over it (not idempotent
 * by itself). `reconcile` answers from the ledger, or as `answer` forces.
 */
export function ledgerTools(
  ledger: Map<string, number>,
  options: { crash?: CrashPoint; answer?: () => Reconciliation<{ receipt: string }> },
): { tools: ToolRegistry; calls: LedgerCalls } {
  const calls: LedgerCalls = { executed: [], reconciled: [] };
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

/**
 * Runs `charge` on `first` until the call is made, then freezes it there (the process dies with
 * the call's outcome unknown) and resumes the run on `second` (the same storage, as another
 * process opens it) once the lease has expired.
 */
export async function crashThenResume(
  stores: { readonly first: RunStore; readonly second: RunStore },
  crash: CrashPoint,
  answer?: () => Reconciliation<{ receipt: string }>,
) {
  const runId = uniqueRunId();
  const frozen = new FreezableStore(stores.first);
  const ledger = new Map<string, number>();
  const first = ledgerTools(ledger, { crash });
  const plan = makePlan([{ id: 'pay', tool: 'charge', args: { amount: 42 } }]);
  engineOver(frozen, first.tools)
    .run(plan, { runId })
    .result.catch(() => undefined);
  await until(() => first.calls.executed.length === 1, 'the charge to start', 10_000);
  frozen.freeze();
  await pause(TTL_MS + 100);
  const second = ledgerTools(ledger, answer ? { answer } : {});
  const result = await engineOver(stores.second, second.tools).resume(runId).result;
  const events = await readAll(stores.second, runId);
  return { result, events, ledger, first: first.calls, second: second.calls };
}

/**
 * A tool's `reconcile` answers for a non-idempotent call a crash left unknown, under every store:
 * what the store kept of the interrupted call is what the resume asks about.
 */
export function reconcileCases(harness: StoreHarness): void {
  describe('store conformance: reconciling a call a crash left unknown', () => {
    const withStores = async (scenario: (stores: { first: RunStore; second: RunStore }) => Promise<void>) => {
      const first = await harness.create();
      const second = harness.connect ? await harness.connect(first) : first;
      try {
        await scenario({ first, second });
      } finally {
        if (second !== first) await second.close();
        await first.close();
      }
    };

    it('done: the step succeeds with the output reconcile gives, and the effect is not performed again', async () => {
      await withStores(async (stores) => {
        const { result, events, ledger, first, second } = await crashThenResume(stores, 'after-effect');
        const key = first.executed[0] as string;
        expect(result.status).toBe('completed');
        expect(result.steps[0]).toMatchObject({ status: 'succeeded', attempt: 1, output: { receipt: key } });
        expect(second).toEqual({ executed: [], reconciled: [key] });
        expect([...ledger.entries()]).toEqual([[key, 42]]);
        expect(eventsOfType(events, 'run-resume')[0]?.interrupted).toEqual([{ stepId: 'pay', action: 'reconcile' }]);
        const results = eventsOfType(events, 'tool-result');
        expect(results).toHaveLength(1);
        expect(results[0]).toMatchObject({ status: 'succeeded', reconciled: true, output: { receipt: key } });
      });
    }, 30_000);

    it('not done: the step runs again, with the same idempotency key', async () => {
      await withStores(async (stores) => {
        const { result, ledger, first, second } = await crashThenResume(stores, 'before-effect');
        const key = first.executed[0] as string;
        expect(result.status).toBe('completed');
        expect(result.steps[0]).toMatchObject({ status: 'succeeded', attempt: 2 });
        expect(second).toEqual({ executed: [key], reconciled: [key] });
        expect([...ledger.entries()]).toEqual([[key, 42]]);
      });
    }, 30_000);

    it('unknown: the step fails as interrupted (E309) and does not run again', async () => {
      await withStores(async (stores) => {
        const reason = 'the ledger is unreachable';
        const { result, second } = await crashThenResume(stores, 'after-effect', () => ({ status: 'unknown', reason }));
        expect(result.status).toBe('failed');
        expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.STEP_INTERRUPTED, retryable: false });
        expect(result.steps[0]?.error?.message).toContain(reason);
        expect(second.executed).toEqual([]);
      });
    }, 30_000);
  });
}
