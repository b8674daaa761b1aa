import { ErrorCodes, type StepResult } from '@stepwise/core';
import { MemoryStore, makePlan } from '@stepwise/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dagEngine } from '../src/index.js';
import { createHarness, eventCollector, storedEvents } from './harness.js';

const byId = (steps: readonly StepResult[]) => new Map(steps.map((step) => [step.stepId, step]));

describe('failure policy', () => {
  it('a non-critical failure skips exactly its transitive dependents; independents continue', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'a', tool: 'echo', args: { value: 'a' } },
      { id: 'f', tool: 'fail', args: { message: 'boom' }, critical: false },
      { id: 'g', tool: 'echo', args: { value: 'g' }, dependsOn: ['f'] },
      { id: 'h', tool: 'echo', args: { value: 'h' }, dependsOn: ['g'] },
      { id: 'j', tool: 'echo', args: { value: 'j' }, dependsOn: ['a', 'f'] },
      { id: 'i', tool: 'work', args: { ms: 30 }, dependsOn: ['a'] },
      { id: 'k', tool: 'work', args: { ms: 30 } },
      { id: 'l', tool: 'echo', args: { value: 'l' }, dependsOn: ['i', 'k'] },
    ]);
    const result = await engine.run(plan).result;
    const steps = byId(result.steps);
    expect(result.status).toBe('partial');
    expect(steps.get('f')?.status).toBe('failed');
    expect(steps.get('f')?.error?.message).toBe('boom');
    for (const id of ['g', 'h', 'j']) {
      expect(steps.get(id)?.status).toBe('skipped');
      expect(steps.get(id)?.error?.code).toBe(ErrorCodes.DEPENDENCY_FAILED);
    }
    expect(steps.get('g')?.error?.message).toBe('dependency "f" failed');
    expect(steps.get('h')?.error?.message).toBe('dependency "g" was skipped');
    for (const id of ['a', 'i', 'k', 'l']) expect(steps.get(id)?.status).toBe('succeeded');
    // The skipped steps' tools were never called.
    expect(harness.log.calls.map((call) => call.stepId).sort()).toEqual(['a', 'f', 'i', 'k', 'l']);
    expect(result.steps).toHaveLength(plan.steps.length);
  });

  it('a critical failure stops the run and cancels in-flight steps through their signal', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'long', tool: 'work', args: { ms: 10_000 } },
      { id: 'stuck', tool: 'hang', args: {} },
      { id: 'after-long', tool: 'echo', args: { value: 1 }, dependsOn: ['long'] },
      { id: 'short', tool: 'work', args: { ms: 30 } },
      { id: 'bad', tool: 'fail', args: { message: 'critical boom' }, dependsOn: ['short'] },
      { id: 'after-bad', tool: 'echo', args: { value: 2 }, dependsOn: ['bad'] },
    ]);
    const started = performance.now();
    const handle = engine.run(plan);
    const result = await handle.result;
    expect(performance.now() - started).toBeLessThan(3000);
    const steps = byId(result.steps);
    expect(result.status).toBe('failed');
    expect(steps.get('bad')?.status).toBe('failed');
    expect(steps.get('long')?.status).toBe('cancelled');
    expect(steps.get('long')?.error?.code).toBe(ErrorCodes.STEP_CANCELLED);
    expect(steps.get('stuck')?.status).toBe('cancelled');
    expect(steps.get('after-long')?.status).toBe('cancelled');
    expect(steps.get('after-bad')?.status).toBe('skipped');
    // The tool saw its signal abort: nothing is left running.
    const long = harness.spansOf('long')[0];
    expect(long?.outcome).toBe('aborted');
    expect(handle.progress()).toEqual({ done: 6, total: 6, running: 0 });
    expect(harness.log.calls.some((call) => call.stepId === 'after-long' || call.stepId === 'after-bad')).toBe(false);
  });

  it('denied approval: the step is denied, its dependents skipped, independents continue', async () => {
    const harness = createHarness();
    const asked: string[] = [];
    const plan = makePlan([
      { id: 'write', tool: 'note', args: { text: 'hello' }, requiresApproval: true },
      { id: 'after', tool: 'echo', args: { value: 1 }, dependsOn: ['write'] },
      { id: 'other', tool: 'echo', args: { value: 2 } },
    ]);
    const store = new MemoryStore();
    const engine = dagEngine({
      tools: harness.registry,
      store,
      approvals: {
        handler: async (request) => {
          asked.push(request.stepId);
          return { decision: 'deny', by: 'tester', reason: 'not today' };
        },
      },
    });
    const result = await engine.run(plan).result;
    const steps = byId(result.steps);
    expect(asked).toEqual(['write']);
    expect(steps.get('write')?.status).toBe('denied');
    expect(steps.get('write')?.error?.code).toBe(ErrorCodes.APPROVAL_DENIED);
    expect(steps.get('after')?.status).toBe('skipped');
    expect(steps.get('after')?.error?.message).toBe('dependency "write" was denied');
    expect(steps.get('other')?.status).toBe('succeeded');
    expect(result.status).toBe('partial');
    expect(harness.log.count('note')).toBe(0);
    const events = await storedEvents(store, result.runId);
    const decision = events.find((event) => event.type === 'approval-decision');
    expect(decision).toMatchObject({ decision: 'denied', by: 'tester', reason: 'not today' });
    expect(engine.name).toBe('dag');
  });

  it('an approval answered "skip" lets dependents run (they only lose that output)', async () => {
    const harness = createHarness();
    const engine = dagEngine({
      tools: harness.registry,
      approvals: { handler: async () => ({ decision: 'skip' }) },
    });
    const plan = makePlan([
      { id: 'optional', tool: 'note', args: { text: 'x' }, requiresApproval: true },
      { id: 'after', tool: 'echo', args: { value: 1 }, dependsOn: ['optional'] },
      { id: 'needs-output', tool: 'echo', args: { value: '$optional' }, dependsOn: ['optional'] },
    ]);
    const result = await engine.run(plan).result;
    const steps = byId(result.steps);
    expect(steps.get('optional')?.status).toBe('skipped');
    expect(steps.get('after')?.status).toBe('succeeded');
    expect(steps.get('needs-output')?.status).toBe('skipped');
    expect(steps.get('needs-output')?.error?.code).toBe(ErrorCodes.DEPENDENCY_FAILED);
    expect(steps.get('needs-output')?.error?.message).toContain('references the output of "optional"');
    expect(result.status).toBe('partial');
  });

  it('times a step out (E306) and applies the policy', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry, retry: { maxAttempts: 1 } });
    const plan = makePlan([
      { id: 'slow', tool: 'work', args: { ms: 5_000 }, timeoutMs: 50, critical: false },
      { id: 'after', tool: 'echo', args: { value: 1 }, dependsOn: ['slow'] },
      { id: 'fine', tool: 'echo', args: { value: 2 } },
    ]);
    const result = await engine.run(plan).result;
    const steps = byId(result.steps);
    expect(steps.get('slow')?.status).toBe('failed');
    expect(steps.get('slow')?.error?.code).toBe(ErrorCodes.STEP_TIMEOUT);
    expect(harness.spansOf('slow')[0]?.outcome).toBe('aborted');
    expect(steps.get('after')?.status).toBe('skipped');
    expect(steps.get('fine')?.status).toBe('succeeded');
  });
});

describe('retries with backoff (fake timers)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('retries retryable errors after 1 s then 2 s, each attempt with its own executionId', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const harness = createHarness();
    const { events, onEvent } = eventCollector();
    // random 0.5 puts the jitter at exactly zero, so delays are the policy's own.
    const engine = dagEngine({ tools: harness.registry, random: () => 0.5, onEvent });
    const plan = makePlan([
      { id: 'flaky', tool: 'flaky', args: { failures: 2 } },
      { id: 'after', tool: 'echo', args: { value: '$flaky/succeededOn' }, dependsOn: ['flaky'] },
    ]);
    const handle = engine.run(plan);
    await vi.advanceTimersByTimeAsync(0);
    expect(harness.log.count('flaky')).toBe(1);
    expect(handle.stepStatus('flaky')).toBe('retrying');
    await vi.advanceTimersByTimeAsync(999);
    expect(harness.log.count('flaky')).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(harness.log.count('flaky')).toBe(2);
    await vi.advanceTimersByTimeAsync(1999);
    expect(harness.log.count('flaky')).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    const result = await handle.result;
    expect(harness.log.count('flaky')).toBe(3);
    expect(result.status).toBe('completed');
    const flaky = result.steps.find((step) => step.stepId === 'flaky');
    expect(flaky?.attempt).toBe(3);
    expect(result.steps.find((step) => step.stepId === 'after')?.output).toEqual({ value: 3 });
    const retries = events.filter((event) => event.type === 'step-retry');
    expect(retries.map((event) => [event.attempt, event.nextAttempt, event.delayMs])).toEqual([
      [1, 2, 1000],
      [2, 3, 2000],
    ]);
    const executionIds = events.filter((event) => event.type === 'tool-call').map((event) => event.executionId);
    expect(new Set(executionIds).size).toBe(4);
    expect(harness.log.calls.filter((call) => call.tool === 'flaky').map((call) => call.attempt)).toEqual([1, 2, 3]);
  });

  it('does not retry errors that are not retryable', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const harness = createHarness();
    const { events, onEvent } = eventCollector();
    const engine = dagEngine({ tools: harness.registry, onEvent });
    const plan = makePlan([{ id: 'permanent', tool: 'flaky', args: { failures: 5, retryable: false } }]);
    const handle = engine.run(plan);
    await vi.advanceTimersByTimeAsync(60_000);
    const result = await handle.result;
    expect(result.status).toBe('failed');
    expect(harness.log.count('flaky')).toBe(1);
    expect(events.some((event) => event.type === 'step-retry')).toBe(false);
  });

  it('gives up after maxAttempts (step policy over engine default) with jittered, capped delays', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const harness = createHarness();
    const { events, onEvent } = eventCollector();
    const engine = dagEngine({
      tools: harness.registry,
      onEvent,
      random: () => 1,
      retry: { initialDelayMs: 100, factor: 10, maxDelayMs: 5_000, jitter: 0.1 },
    });
    const plan = makePlan([
      { id: 'doomed', tool: 'flaky', args: { failures: 99 }, retry: { maxAttempts: 4 }, critical: false },
    ]);
    const handle = engine.run(plan);
    await vi.advanceTimersByTimeAsync(60_000);
    const result = await handle.result;
    expect(harness.log.count('flaky')).toBe(4);
    expect(result.steps[0]?.status).toBe('failed');
    expect(result.steps[0]?.attempt).toBe(4);
    expect(result.status).toBe('partial');
    // 100, 1000, min(10000, 5000) — each +10 % with random = 1.
    expect(events.filter((event) => event.type === 'step-retry').map((event) => event.delayMs)).toEqual([
      110, 1100, 5500,
    ]);
  });

  it('cancelling during a backoff ends the step cancelled without another attempt', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry, random: () => 0.5 });
    const handle = engine.run(makePlan([{ id: 'flaky', tool: 'flaky', args: { failures: 3 } }]));
    await vi.advanceTimersByTimeAsync(10);
    expect(handle.stepStatus('flaky')).toBe('retrying');
    handle.cancel('user pressed stop');
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(result.steps[0]?.status).toBe('cancelled');
    expect(result.steps[0]?.error?.message).toBe('cancelled: user pressed stop');
    expect(harness.log.count('flaky')).toBe(1);
  });
});
