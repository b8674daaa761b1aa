import {
  defineTool,
  ErrorCodes,
  type Plan,
  planDigest,
  type RunEvent,
  type StepResult,
  type StepwiseError,
} from '@stepwise/core';
import type { RunEventInput } from '@stepwise/core/engine';
import { FreezableStore, MemoryStore, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { type DagEngineOptions, dagEngine } from '../src/index.js';
import { createHarness, type Harness, resumeWhenFree, storedEvents } from './harness.js';

const byId = (steps: readonly StepResult[]) => new Map(steps.map((step) => [step.stepId, step]));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Adds `crash_read` (idempotent) and `crash_write` (not): their first call "kills the process". */
function addCrashTools(harness: Harness, store: FreezableStore): void {
  for (const [name, effect, lateMs] of [
    ['crash_read', 'read', 0],
    ['crash_write', 'write', 0],
    // Dies 20 ms into the call: by then an idempotent call is committed too.
    ['crash_read_late', 'read', 20],
  ] as const) {
    harness.registry.register(
      defineTool({
        name,
        description: 'The first call freezes the store (the process dies mid-tool); later calls succeed.',
        input: { type: 'object', properties: {} },
        effect,
        execute: (_input, context) => {
          harness.log.calls.push({ tool: name, args: {}, stepId: context.stepId, attempt: context.attempt });
          if (!store.frozen) {
            const die = () => {
              store.freeze();
              return new Promise<never>(() => undefined);
            };
            return lateMs === 0 ? die() : pause(lateMs).then(die);
          }
          return { survived: context.attempt };
        },
      }),
    );
  }
}

async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await pause(5);
  }
}

function crashingRun(plan: Plan, options: Partial<DagEngineOptions> = {}) {
  const harness = createHarness();
  const inner = new MemoryStore();
  const store = new FreezableStore(inner);
  addCrashTools(harness, store);
  const handle = dagEngine({ tools: harness.registry, store, leaseTtlMs: 500, ...options }).run(plan);
  return { harness, inner, store, handle };
}

const callsOf = (harness: Harness, stepId: string) => harness.log.calls.filter((call) => call.stepId === stepId);

describe('resume after an in-process simulated crash', () => {
  const plan = (crashTool: string, critical = true) =>
    makePlan([
      { id: 'a', tool: 'echo', args: { value: 'A' } },
      { id: 'b', tool: 'tree', args: {} },
      { id: 'c', tool: crashTool, args: {}, dependsOn: ['a', 'b'], critical },
      { id: 'd', tool: 'echo', args: { value: { $ref: 'b', pointer: '/config/version' } }, dependsOn: ['b', 'c'] },
      { id: 'e', tool: 'echo', args: { value: '$a/value' }, dependsOn: ['c'] },
      { id: 'f', tool: 'work', args: { ms: 5 }, dependsOn: ['a'] },
    ]);

  it('re-runs an idempotent step that died at its first instruction, before its call was committed', async () => {
    // An idempotent call is committed with its result (one commit per quick step): a crash before
    // that leaves no trace of the call, and resume simply runs the step, as its first attempt.
    const { harness, inner, store, handle } = crashingRun(plan('crash_read'));
    await waitFor(() => store.frozen);
    const { result } = await resumeWhenFree({ tools: harness.registry, store: inner }, handle.runId);
    expect(result.status).toBe('completed');
    const steps = byId(result.steps);
    expect(steps.get('d')?.output).toEqual({ value: '2.0.0' });
    expect(steps.get('e')?.output).toEqual({ value: 'A' });
    expect(steps.get('c')?.attempt).toBe(1);
    expect(callsOf(harness, 'a')).toHaveLength(1);
    expect(callsOf(harness, 'b')).toHaveLength(1);
    expect(callsOf(harness, 'c')).toHaveLength(2);
    const events = await storedEvents(inner, handle.runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
  });

  it('re-runs an in-flight idempotent step, never a completed one, and restores outputs for references', async () => {
    const { harness, inner, store, handle } = crashingRun(plan('crash_read_late'));
    await waitFor(() => store.frozen);
    const before = await storedEvents(inner, handle.runId);
    expect(before.some((event) => event.type === 'run-end')).toBe(false);

    const { result } = await resumeWhenFree({ tools: harness.registry, store: inner }, handle.runId);
    expect(result.status).toBe('completed');
    const steps = byId(result.steps);
    expect(steps.get('d')?.output).toEqual({ value: '2.0.0' });
    expect(steps.get('e')?.output).toEqual({ value: 'A' });
    expect(steps.get('c')?.attempt).toBe(2);
    expect(callsOf(harness, 'a')).toHaveLength(1);
    expect(callsOf(harness, 'b')).toHaveLength(1);
    expect(callsOf(harness, 'c')).toHaveLength(2);
    const events = await storedEvents(inner, handle.runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const resumed = events.find((event) => event.type === 'run-resume');
    // `f` (5 ms, independent of the crash) may have been in flight too.
    expect(resumed?.type === 'run-resume' && resumed.interrupted).toContainEqual({ stepId: 'c', action: 'rerun' });
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
  });

  it('fails an in-flight non-idempotent step as interrupted (E309) and skips its dependents', async () => {
    const { harness, inner, store, handle } = crashingRun(plan('crash_write', false));
    await waitFor(() => store.frozen);
    const { result } = await resumeWhenFree({ tools: harness.registry, store: inner }, handle.runId);
    const steps = byId(result.steps);
    expect(steps.get('c')?.status).toBe('failed');
    expect(steps.get('c')?.error?.code).toBe(ErrorCodes.STEP_INTERRUPTED);
    expect(steps.get('d')?.status).toBe('skipped');
    expect(steps.get('e')?.status).toBe('skipped');
    expect(steps.get('f')?.status).toBe('succeeded');
    expect(result.status).toBe('partial');
    expect(callsOf(harness, 'c')).toHaveLength(1);
  });

  it('a critical interrupted step fails the run; allowRerunInterrupted runs it again instead', async () => {
    const first = crashingRun(plan('crash_write'));
    await waitFor(() => first.store.frozen);
    const failed = await resumeWhenFree({ tools: first.harness.registry, store: first.inner }, first.handle.runId);
    expect(failed.result.status).toBe('failed');

    const second = crashingRun(plan('crash_write'));
    await waitFor(() => second.store.frozen);
    const rerun = await resumeWhenFree(
      { tools: second.harness.registry, store: second.inner, allowRerunInterrupted: true },
      second.handle.runId,
    );
    expect(rerun.result.status).toBe('completed');
    expect(callsOf(second.harness, 'c')).toHaveLength(2);
  });

  it('continues a step that was waiting out a retry backoff', async () => {
    const harness = createHarness();
    const inner = new MemoryStore();
    const store = new FreezableStore(inner);
    const handle = dagEngine({ tools: harness.registry, store, leaseTtlMs: 500 }).run(
      makePlan([
        { id: 'flaky', tool: 'flaky', args: { failures: 1 }, retry: { maxAttempts: 3, initialDelayMs: 60_000 } },
        { id: 'after', tool: 'echo', args: { value: '$flaky/succeededOn' }, dependsOn: ['flaky'] },
      ]),
    );
    await waitFor(async () => (await storedEvents(inner, handle.runId)).some((event) => event.type === 'step-retry'));
    store.freeze();
    const started = Date.now();
    const { result } = await resumeWhenFree({ tools: harness.registry, store: inner }, handle.runId);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.status).toBe('completed');
    expect(byId(result.steps).get('flaky')?.attempt).toBe(2);
    expect(byId(result.steps).get('after')?.output).toEqual({ value: 2 });
  });

  it('lets exactly one of two concurrent resumers win the run', async () => {
    const { harness, inner, store, handle } = crashingRun(plan('crash_read'));
    await waitFor(() => store.frozen);
    // Past the crashed run's lease (500 ms), so both resumers find the run free.
    await pause(600);
    const options = { tools: harness.registry, store: inner };
    const outcomes = await Promise.allSettled([
      dagEngine(options).resume(handle.runId).result,
      dagEngine(options).resume(handle.runId).result,
    ]);
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const lost = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(((lost[0] as PromiseRejectedResult).reason as StepwiseError).code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(callsOf(harness, 'c')).toHaveLength(2);
  });
});

describe('resume from a journal', () => {
  const at = () => new Date().toISOString();
  const stamp = (runId: string, inputs: RunEventInput[]): RunEvent[] =>
    inputs.map((input, index) => ({ ...input, runId, seq: index + 1, at: at() }) as RunEvent);

  it('finishes a step whose tool result is journaled without calling the tool again', async () => {
    const harness = createHarness();
    const store = new MemoryStore();
    const plan = makePlan([
      { id: 'write', tool: 'note', args: { text: 'once' } },
      { id: 'after', tool: 'echo', args: { value: '$write/written' }, dependsOn: ['write'] },
    ]);
    const runId = 'run_finish';
    await store.append(
      runId,
      stamp(runId, [
        { type: 'run-start', planId: plan.id, planDigest: planDigest(plan), plan, engine: 'dag' },
        { type: 'step-start', stepId: 'write', tool: 'note', attempt: 1, executionId: 'ex_1' },
        {
          type: 'tool-call',
          stepId: 'write',
          executionId: 'ex_1',
          attempt: 1,
          tool: 'note',
          effect: 'write',
          idempotent: false,
          args: { text: 'once' },
        },
        {
          type: 'tool-result',
          stepId: 'write',
          executionId: 'ex_1',
          tool: 'note',
          status: 'succeeded',
          output: { written: 4 },
          startedAt: at(),
          durationMs: 1,
        },
      ]),
    );
    const result = await dagEngine({ tools: harness.registry, store }).resume(runId).result;
    expect(result.status).toBe('completed');
    expect(harness.log.count('note')).toBe(0);
    const steps = byId(result.steps);
    expect(steps.get('write')).toMatchObject({ status: 'succeeded', output: { written: 4 }, executionId: 'ex_1' });
    expect(steps.get('after')?.output).toEqual({ value: 4 });
    const resumeEvent = (await storedEvents(store, runId)).find((event) => event.type === 'run-resume');
    expect(resumeEvent).toMatchObject({ interrupted: [{ stepId: 'write', action: 'finish' }] });
  });

  it('replays a finished run without running anything, and refuses unknown or foreign runs', async () => {
    const harness = createHarness();
    const store = new MemoryStore();
    const engine = dagEngine({ tools: harness.registry, store });
    const first = await engine.run(makePlan([{ id: 'a', tool: 'echo', args: { value: 1 } }])).result;
    const again = engine.resume(first.runId);
    const replayed = await again.result;
    expect(replayed.status).toBe('completed');
    expect(replayed.steps).toEqual(first.steps);
    expect(harness.log.count()).toBe(1);
    expect(again.progress()).toEqual({ done: 1, total: 1, running: 0 });
    const iterated: RunEvent[] = [];
    for await (const event of again) iterated.push(event);
    expect(iterated.at(-1)?.type).toBe('run-end');

    const unknown = await engine.resume('run_nobody_knows').result.catch((error: unknown) => error as StepwiseError);
    expect((unknown as StepwiseError).code).toBe(ErrorCodes.RUN_NOT_FOUND);

    const plan = makePlan([{ id: 'a', tool: 'echo', args: {} }]);
    await store.append(
      'run_strict',
      stamp('run_strict', [
        { type: 'run-start', planId: plan.id, planDigest: planDigest(plan), plan, engine: 'sequential' },
      ]),
    );
    const foreign = await engine.resume('run_strict').result.catch((error: unknown) => error as StepwiseError);
    expect((foreign as StepwiseError).code).toBe(ErrorCodes.CONFIG_INVALID);
    // The refused resume released the lease: another attempt is refused the same way, not with E501.
    const again2 = await engine.resume('run_strict').result.catch((error: unknown) => error as StepwiseError);
    expect((again2 as StepwiseError).code).toBe(ErrorCodes.CONFIG_INVALID);
  });

  it('reuses the journaled concurrency on resume', async () => {
    const harness = createHarness();
    const inner = new MemoryStore();
    const store = new FreezableStore(inner);
    addCrashTools(harness, store);
    const parallel = Array.from({ length: 6 }, (_, index) => ({
      id: `p${index}`,
      tool: 'work',
      args: { ms: 20 },
      dependsOn: ['gate'],
    }));
    const handle = dagEngine({ tools: harness.registry, store, leaseTtlMs: 500, concurrency: 2 }).run(
      makePlan([{ id: 'gate', tool: 'crash_read', args: {} }, ...parallel]),
    );
    await waitFor(() => store.frozen);
    // The resuming engine is configured unbounded, but the run was started with 2.
    const { result } = await resumeWhenFree({ tools: harness.registry, store: inner }, handle.runId);
    expect(result.status).toBe('completed');
    expect(harness.maxActive()).toBe(2);
  });
});
