import { defineTool, type Plan, type RunEvent, ToolRegistry } from '@stepwise/core';
import { BATCHED_EVENTS_MAX } from '@stepwise/core/engine';
import type { Lease } from '@stepwise/core/store';
import { FreezableStore, MemoryStore, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { type DagEngineOptions, dagEngine } from '../src/index.js';
import { lookAndPut, resumeWhenFree, storedEvents } from './harness.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A store whose appends take `delayMs` (a disk), recording each batch and which step ends are in. */
class SlowStore extends MemoryStore {
  readonly batches: RunEvent[][] = [];
  readonly durableEnds = new Set<string>();

  constructor(private readonly delayMs: number) {
    super();
  }

  override async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    await super.append(runId, events, lease);
    this.batches.push([...events]);
    for (const event of events) if (event.type === 'step-end') this.durableEnds.add(event.stepId);
  }
}

/**
 * `look` (read, idempotent) and `put` (write, not idempotent). Each call checks that the ends of
 * the dependencies it names in `after` were durable before it started.
 */
function tools(store: SlowStore, early: string[]) {
  const tool = (name: string, effect: 'read' | 'write') =>
    defineTool({
      name,
      description: `${effect} something`,
      input: { type: 'object', properties: { after: { type: 'array', items: { type: 'string' } } } },
      effect,
      execute: (input, context) => {
        for (const dependency of (input as { after?: string[] }).after ?? []) {
          if (!store.durableEnds.has(dependency)) early.push(`${context.stepId} before ${dependency}`);
        }
        return { step: context.stepId };
      },
    });
  return new ToolRegistry([tool('look', 'read'), tool('put', 'write')]);
}

/** root → m0 … m{width-1} → join, every step a `look`; `join` names every middle step. */
function fanOut(width: number): Plan {
  const middle = Array.from({ length: width }, (_, index) => `m${index}`);
  return makePlan([
    { id: 'root', tool: 'look', args: {} },
    ...middle.map((id) => ({ id, tool: 'look', args: { after: ['root'] }, dependsOn: ['root'] })),
    { id: 'join', tool: 'look', args: { after: middle }, dependsOn: middle },
  ]);
}

const endsIn = (batch: readonly RunEvent[]) => batch.filter((event) => event.type === 'step-end').length;

describe("durability: 'step' (the default)", () => {
  it('frees a finished idempotent step’s slot before its end commits: a fan-out shares commits beyond the concurrency', async () => {
    const store = new SlowStore(15);
    const early: string[] = [];
    const result = await dagEngine({ tools: tools(store, early), store, concurrency: 2 }).run(fanOut(24)).result;
    expect(result.status).toBe('completed');
    expect(early).toEqual([]);
    // Holding each slot until its own commit would take at least 24 / 2 = 12 commits for the middle
    // steps' ends; freed slots let the steps that start during a commit join the next one.
    const withEnds = store.batches.filter((batch) => endsIn(batch) > 0);
    expect(withEnds.length).toBeLessThanOrEqual(6);
    expect(Math.max(...withEnds.map(endsIn))).toBeGreaterThan(2);
  });

  it('starts no step before its dependencies’ ends are durable, on a chain and across a write tool', async () => {
    const store = new SlowStore(5);
    const early: string[] = [];
    const ids = ['a', 'b', 'w', 'c', 'd'];
    const plan = makePlan(
      ids.map((id, index) => ({
        id,
        tool: id === 'w' ? 'put' : 'look',
        args: index > 0 ? { after: [ids[index - 1] as string] } : {},
        ...(index > 0 ? { dependsOn: [ids[index - 1] as string] } : {}),
      })),
    );
    const result = await dagEngine({ tools: tools(store, early), store }).run(plan).result;
    expect(result.status).toBe('completed');
    expect(early).toEqual([]);
    // A chain commits once per step: each step waits for the one before it.
    expect(store.batches.filter((batch) => endsIn(batch) > 0).map(endsIn)).toEqual([1, 1, 1, 1, 1]);
  });

  it('keeps the old behaviour where the batched mode differs: batched lets dependents start before the commit', async () => {
    const store = new SlowStore(5);
    const early: string[] = [];
    const ids = ['a', 'b', 'c', 'd'];
    const plan = makePlan(
      ids.map((id, index) => ({
        id,
        tool: 'look',
        args: index > 0 ? { after: [ids[index - 1] as string] } : {},
        ...(index > 0 ? { dependsOn: [ids[index - 1] as string] } : {}),
      })),
    );
    const result = await dagEngine({ tools: tools(store, early), store, durability: 'batched' }).run(plan).result;
    expect(result.status).toBe('completed');
    // The contrast that makes the first two tests meaningful: without the gate, dependents run early.
    expect(early.length).toBeGreaterThan(0);
  });

  it(`lets at most ${BATCHED_EVENTS_MAX} events wait behind a fan-out of steps that never yield`, async () => {
    const store = new SlowStore(0);
    const early: string[] = [];
    const result = await dagEngine({ tools: tools(store, early), store, concurrency: 16 }).run(fanOut(1500)).result;
    expect(result.status).toBe('completed');
    expect(early).toEqual([]);
    // Each open step adds its events after the check: at most four per slot.
    const sizes = store.batches.map((batch) => batch.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(BATCHED_EVENTS_MAX + 4 * 16);
    expect(sizes.length).toBeGreaterThanOrEqual(Math.floor((1502 * 4) / (BATCHED_EVENTS_MAX + 4 * 16)));
  });

  it('after a crash mid-fan-out runs no committed step and no write again', async () => {
    const inner = new MemoryStore();
    const store = new FreezableStore(inner);
    const calls: string[] = [];
    const registry = lookAndPut(calls, async (stepId) => {
      // The process "dies" inside m20: every later write hangs, as if the process were gone.
      if (stepId === 'm20' && !store.frozen) {
        store.freeze();
        await new Promise(() => undefined);
      }
      await pause(1);
    });
    const middle = Array.from({ length: 30 }, (_, index) => `m${index}`);
    const plan = makePlan([
      { id: 'root', tool: 'look', args: {} },
      ...middle.map((id) => ({ id, tool: id === 'm10' ? 'put' : 'look', args: {}, dependsOn: ['root'] })),
      { id: 'join', tool: 'look', args: {}, dependsOn: middle },
    ]);
    const options: DagEngineOptions = {
      tools: registry,
      store,
      concurrency: 4,
      leaseTtlMs: 500,
    };
    const handle = dagEngine(options).run(plan);
    while (!store.frozen) await pause(5);
    await pause(20);
    const before = await storedEvents(inner, handle.runId);
    const durableEnds = new Set(before.filter((event) => event.type === 'step-end').map((event) => event.stepId));
    expect(durableEnds.has('m10')).toBe(true);

    const { result } = await resumeWhenFree({ ...options, store: inner }, handle.runId);
    expect(result.status).toBe('completed');
    const count = (id: string) => calls.filter((call) => call === id).length;
    expect(count('m10')).toBe(1);
    for (const id of durableEnds) expect(count(id)).toBe(1);
    for (const id of ['root', ...middle, 'join']) expect(count(id)).toBeGreaterThanOrEqual(1);
    const events = await storedEvents(inner, handle.runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  });
});
