import type { RunEvent } from '@stepwise/core';
import type { StepStartEvent } from '@stepwise/core/store';
import { chainPlan, MemoryStore, makePlan, randomDagPlan, seededRandom } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';
import { createHarness, eventCollector, onlySpan } from './harness.js';

const startOrder = (events: readonly RunEvent[]) =>
  events.filter((event): event is StepStartEvent => event.type === 'step-start').map((event) => event.stepId);

describe('eager scheduling', () => {
  it('runs a diamond: both branches in parallel, the join after both', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'a', tool: 'work', args: { ms: 20, value: 'A' } },
      { id: 'b', tool: 'work', args: { ms: 80, value: { $ref: 'a', pointer: '/value' } }, dependsOn: ['a'] },
      { id: 'c', tool: 'work', args: { ms: 80, value: '$a/value' }, dependsOn: ['a'] },
      { id: 'd', tool: 'work', args: { ms: 10, value: ['$b/value', '$c/value'] }, dependsOn: ['b', 'c'] },
    ]);
    const handle = engine.run(plan);
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(result.engine).toBe('dag');
    expect(result.steps.map((step) => step.stepId)).toEqual(['a', 'b', 'c', 'd']);
    expect(result.steps.find((step) => step.stepId === 'd')?.output).toEqual({ stepId: 'd', value: ['A', 'A'] });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => onlySpan(harness, id));
    expect(b?.start).toBeGreaterThanOrEqual(a?.end as number);
    expect(c?.start).toBeGreaterThanOrEqual(a?.end as number);
    // b and c overlap: neither waited for the other.
    expect(c?.start).toBeLessThan(b?.end as number);
    expect(b?.start).toBeLessThan(c?.end as number);
    expect(d?.start).toBeGreaterThanOrEqual(Math.max(b?.end as number, c?.end as number));
    expect(handle.progress()).toEqual({ done: 4, total: 4, running: 0 });
    expect(handle.stepStatus('d')).toBe('succeeded');
  });

  it('fans out 60 steps at once and fans them back in', async () => {
    const harness = createHarness();
    // Unbounded on purpose (the default is 16): every ready step starts at once.
    const engine = dagEngine({ tools: harness.registry, concurrency: Number.POSITIVE_INFINITY });
    const middle = Array.from({ length: 60 }, (_, index) => ({
      id: `m${index}`,
      tool: 'work',
      args: { ms: 60, value: index },
      dependsOn: ['root'],
    }));
    const plan = makePlan([
      { id: 'root', tool: 'work', args: { ms: 5 } },
      ...middle,
      {
        id: 'sink',
        tool: 'echo',
        args: { value: middle.map((step) => ({ $ref: step.id, pointer: '/value' })) },
        dependsOn: middle.map((step) => step.id),
      },
    ]);
    const started = performance.now();
    const result = await engine.run(plan).result;
    const elapsed = performance.now() - started;
    expect(result.status).toBe('completed');
    expect(harness.maxActive()).toBe(60);
    expect(result.steps.at(-1)?.output).toEqual({ value: Array.from({ length: 60 }, (_, index) => index) });
    const lastMiddleEnd = Math.max(...middle.map((step) => onlySpan(harness, step.id).end as number));
    const sinkCall = harness.log.calls.findIndex((call) => call.stepId === 'sink');
    expect(sinkCall).toBe(harness.log.calls.length - 1);
    expect(lastMiddleEnd).toBeLessThanOrEqual(performance.now());
    // 60 × 60 ms in sequence would be 3.6 s; in parallel it is one step's worth plus overhead.
    expect(elapsed).toBeLessThan(1500);
  });

  it('runs a long chain strictly one after another', async () => {
    const harness = createHarness();
    const { events, onEvent } = eventCollector();
    const engine = dagEngine({ tools: harness.registry, onEvent });
    const result = await engine.run(chainPlan(300)).result;
    expect(result.status).toBe('completed');
    expect(result.steps).toHaveLength(300);
    expect(startOrder(events)).toEqual(Array.from({ length: 300 }, (_, index) => `s${index}`));
    // Each step starts only after the previous one ended.
    const endSeq = new Map(
      events.filter((event) => event.type === 'step-end').map((event) => [event.stepId, event.seq]),
    );
    for (const event of events) {
      if (event.type !== 'step-start' || event.stepId === 's0') continue;
      const previous = `s${Number(event.stepId.slice(1)) - 1}`;
      expect(event.seq).toBeGreaterThan(endSeq.get(previous) as number);
    }
    expect(events[0]?.type).toBe('run-start');
    expect(events.at(-1)?.type).toBe('run-end');
  });

  it('starts a fast branch’s successor before the slow sibling finishes (no waves)', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'fast', tool: 'work', args: { ms: 10 } },
      { id: 'slow', tool: 'work', args: { ms: 400 } },
      { id: 'fast2', tool: 'work', args: { ms: 10 }, dependsOn: ['fast'] },
      { id: 'fast3', tool: 'work', args: { ms: 10 }, dependsOn: ['fast2'] },
      { id: 'join', tool: 'work', args: { ms: 10 }, dependsOn: ['fast3', 'slow'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    const slow = onlySpan(harness, 'slow');
    expect(onlySpan(harness, 'fast2').start).toBeLessThan(slow.end as number);
    expect(onlySpan(harness, 'fast3').end).toBeLessThan(slow.end as number);
    expect(onlySpan(harness, 'join').start).toBeGreaterThanOrEqual(slow.end as number);
  });

  it('breaks ties among ready steps by plan order, deterministically', async () => {
    const order = async () => {
      const harness = createHarness();
      const { events, onEvent } = eventCollector();
      const engine = dagEngine({ tools: harness.registry, concurrency: 1, onEvent });
      const plan = makePlan([
        { id: 'x', tool: 'echo', args: { value: 1 } },
        { id: 'y', tool: 'echo', args: { value: 2 }, dependsOn: ['x'] },
        { id: 'z', tool: 'echo', args: { value: 3 } },
        { id: 'w', tool: 'echo', args: { value: 4 }, dependsOn: ['z', 'x'] },
        { id: 'v', tool: 'echo', args: { value: 5 } },
      ]);
      await engine.run(plan).result;
      return startOrder(events);
    };
    // z and v were ready first, but y (earlier in the plan) jumps ahead of them once x ends.
    const first = await order();
    expect(first).toEqual(['x', 'y', 'z', 'w', 'v']);
    expect(await order()).toEqual(first);
  });

  it('never exceeds the global bound nor a per-tool bound (instrumented)', async () => {
    const harness = createHarness();
    const random = seededRandom(7);
    const base = randomDagPlan(80, { seed: 11, maxDependencies: 2 });
    const plan = {
      ...base,
      steps: base.steps.map((step, index) => ({
        ...step,
        tool: index % 3 === 0 ? 'slow_tool' : 'work',
        args: { ms: 5 + Math.floor(random() * 25) },
      })),
    };
    const engine = dagEngine({ tools: harness.registry, concurrency: 4, toolConcurrency: { slow_tool: 1 } });
    const handle = engine.run(plan);
    const samples: number[] = [];
    const timer = setInterval(() => samples.push(handle.progress().running), 2);
    const result = await handle.result;
    clearInterval(timer);
    expect(result.status).toBe('completed');
    expect(harness.maxActive()).toBeLessThanOrEqual(4);
    expect(harness.maxActive()).toBeGreaterThanOrEqual(2);
    expect(harness.maxActiveOf('slow_tool')).toBe(1);
    expect(Math.max(...samples)).toBeLessThanOrEqual(4);
    expect(harness.spans).toHaveLength(80);
  });

  it('keeps an unbounded run free of artificial limits', async () => {
    const harness = createHarness();
    const engine = dagEngine({
      tools: harness.registry,
      store: new MemoryStore(),
      concurrency: Number.POSITIVE_INFINITY,
    });
    const plan = makePlan(
      Array.from({ length: 40 }, (_, index) => ({ id: `p${index}`, tool: 'work', args: { ms: 50 } })),
    );
    await engine.run(plan).result;
    expect(harness.maxActive()).toBe(40);
  });
});
