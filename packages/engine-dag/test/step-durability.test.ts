import { defineTool, type Lease, type Plan, type RunEvent, ToolRegistry } from '@stepwise/core';
import { MemoryStore, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';

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
});
