import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import { permissivePolicy } from '../scheduler/policies/permissive-policy.js';
import { createPolicyEngine } from '../scheduler/policy-engine.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan, until } from '../testing/fixtures.js';
import { FreezableStore } from '../testing/freezable-store.js';
import { defineTool, type ToolClaim, type ToolClaimContext } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { RELEASE_WAIT_MS } from './tool-claim.js';

const TTL_MS = 300;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A slot that is free once `open()` is called; `acquire` waits for it honouring the run's signal. */
function gatedSlot() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const log: string[] = [];
  const contexts: ToolClaimContext[] = [];
  const acquire = (context: ToolClaimContext) =>
    new Promise<{ release(): void }>((resolve, reject) => {
      log.push(`acquire ${context.stepId}`);
      contexts.push(context);
      context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true });
      opened.then(() => resolve({ release: () => void log.push(`release ${context.stepId}`) }));
    });
  return { open, log, contexts, acquire };
}

/** A `send` tool that takes `slot`'s claim first and logs its execution in `slot.log`. */
function slottedTools(slot: Pick<ReturnType<typeof gatedSlot>, 'acquire' | 'log'>, effects: string[]): ToolRegistry {
  return new ToolRegistry([
    defineTool({
      name: 'send',
      description: 'Sends once (not idempotent), after taking a slot.',
      input: { type: 'object' },
      effect: 'write',
      acquire: slot.acquire,
      execute: (_input, context) => {
        slot.log.push(`execute ${context.stepId}`);
        effects.push(context.stepId);
        return {};
      },
    }),
  ]);
}

function engineOver(store: RunStore, tools: ToolRegistry) {
  const options = { tools, store, leaseTtlMs: TTL_MS };
  return createPolicyEngine({ policy: permissivePolicy(options), options });
}

const types = async (store: RunStore, runId: string) => (await readAll(store, runId)).map((event) => event.type);

describe('a tool’s claim (acquire) comes before its call is journaled', () => {
  it('journals the call only once the claim is held, and releases it after the tool settled', async () => {
    const slot = gatedSlot();
    const effects: string[] = [];
    const store = new MemoryStore();
    const handle = engineOver(store, slottedTools(slot, effects)).run(
      makePlan([{ id: 'one', tool: 'send', args: {} }]),
      { runId: 'run_claim' },
    );
    await until(() => slot.log.length === 1, 'the claim to be asked for');
    await pause(50);
    expect(await types(store, 'run_claim')).toEqual(['run-start', 'step-start']);
    expect(slot.contexts[0]?.leaseTtlMs).toBe(TTL_MS);
    expect(slot.contexts[0]?.runId).toBe('run_claim');
    slot.open();
    expect((await handle.result).status).toBe('completed');
    expect(slot.log).toEqual(['acquire one', 'execute one', 'release one']);
    expect(await types(store, 'run_claim')).toEqual([
      'run-start',
      'step-start',
      'tool-call',
      'tool-result',
      'step-end',
      'run-end',
    ]);
  });

  it('fails the call without starting the tool when the claim fails, keeping its error', async () => {
    const effects: string[] = [];
    const tools = new ToolRegistry([
      defineTool({
        name: 'send',
        description: 'Its claim always fails.',
        input: { type: 'object' },
        effect: 'write',
        acquire: async () => {
          throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'slots unreachable', { retryable: true });
        },
        execute: (_input, context) => void effects.push(context.stepId),
      }),
    ]);
    const store = new MemoryStore();
    const retry = { maxAttempts: 2, initialDelayMs: 10 };
    const plan = makePlan([{ id: 'one', tool: 'send', args: {}, retry }]);
    const result = await engineOver(store, tools).run(plan, { runId: 'run_unclaimed' }).result;
    // Retryable as the claim said: tried twice, failed, and the tool never ran.
    expect(result.steps[0]).toMatchObject({ status: 'failed', attempt: 2 });
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.STORE_UNAVAILABLE, retryable: true });
    expect(effects).toEqual([]);
    expect((await types(store, 'run_unclaimed')).includes('tool-call')).toBe(false);
  });

  it('leaves no tool-call when the process dies while waiting, so resume runs the step instead of failing it E309', async () => {
    const slot = gatedSlot();
    const effects: string[] = [];
    const store = new FreezableStore(new MemoryStore());
    const first = engineOver(store, slottedTools(slot, effects)).run(
      makePlan([{ id: 'one', tool: 'send', args: {} }]),
      { runId: 'run_died' },
    );
    first.result.catch(() => undefined);
    await until(() => slot.log.length === 1, 'the first claim to be asked for');
    // The process "dies" while it waits: nothing it sends arrives any more, its lease runs out.
    store.freeze();
    await pause(TTL_MS + 50);
    slot.open();
    // Another process carries on from the store the dead one can no longer reach.
    const resumed = await engineOver(store.inner, slottedTools(slot, effects)).resume('run_died').result;
    expect(resumed.status).toBe('completed');
    expect(resumed.steps[0]).toMatchObject({ stepId: 'one', status: 'succeeded' });
    expect(effects).toEqual(['one']);
    const events = await readAll(store, 'run_died');
    const resume = events.find((event) => event.type === 'run-resume');
    expect(resume).toMatchObject({ interrupted: [{ stepId: 'one', action: 'rerun' }] });
    expect(events.filter((event) => event.type === 'tool-call')).toHaveLength(1);
  });
});

describe('a claim whose acquire or release misbehaves', () => {
  it('ends a cancelled run whose acquire ignores its signal, and releases a claim granted afterwards', async () => {
    const executed: string[] = [];
    const released: string[] = [];
    let grant: (claim: ToolClaim) => void = () => undefined;
    const acquire = () =>
      new Promise<ToolClaim>((resolve) => {
        grant = resolve;
      });
    const store = new MemoryStore();
    const handle = engineOver(store, slottedTools({ acquire, log: [] }, executed)).run(
      makePlan([{ id: 'one', tool: 'send', args: {} }]),
      {
        runId: 'run_deaf_acquire',
      },
    );
    await until(async () => (await types(store, 'run_deaf_acquire')).includes('step-start'), 'the step to start');
    handle.cancel('enough');
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.STEP_CANCELLED);
    expect((await types(store, 'run_deaf_acquire')).includes('tool-call')).toBe(false);
    grant({ release: () => void released.push('one') });
    await until(() => released.length === 1, 'the late claim to be released');
    expect(executed).toEqual([]);
  });

  it('ends the step once a release that never settles has had its time', async () => {
    const executed: string[] = [];
    const acquire = async () => ({ release: () => new Promise<never>(() => undefined) });
    const store = new MemoryStore();
    const started = performance.now();
    const result = await engineOver(store, slottedTools({ acquire, log: [] }, executed)).run(
      makePlan([{ id: 'one', tool: 'send', args: {} }]),
      { runId: 'run_deaf_release' },
    ).result;
    expect(result.status).toBe('completed');
    expect(executed).toEqual(['one']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(RELEASE_WAIT_MS - 50);
  }, 15_000);
});
