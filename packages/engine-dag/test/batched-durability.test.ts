import { ErrorCodes, type Plan, type RunEvent, type RunResult, StepwiseError } from '@stepwise/core';
import { BATCHED_EVENTS_MAX, BATCHED_WAIT_MAX_MS } from '@stepwise/core/engine';
import type { Lease } from '@stepwise/core/store';
import { FreezableStore, MemoryStore, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { type DagEngineOptions, dagEngine } from '../src/index.js';
import { lookAndPut, resumeWhenFree, storedEvents } from './harness.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Records every append's size; `refuseAfter` makes later appends fail as a broken disk would. */
class CountingStore extends MemoryStore {
  readonly batches: number[] = [];
  /** How long (ms) each batch's oldest event waited for its append. */
  readonly waits: number[] = [];
  refuseAfter = Number.POSITIVE_INFINITY;

  override async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    if (this.batches.length >= this.refuseAfter) {
      throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'disk full', { location: runId, retryable: false });
    }
    this.batches.push(events.length);
    this.waits.push(Date.now() - Date.parse((events[0] as RunEvent).at));
    return super.append(runId, events, lease);
  }
}

/** look r0 → … → r{before-1} → put w → look r{before} → … → r{before+after-1}. */
function chainAround(before: number, after: number): Plan {
  const ids = [
    ...Array.from({ length: before }, (_, index) => `r${index}`),
    'w',
    ...Array.from({ length: after }, (_, index) => `r${before + index}`),
  ];
  return makePlan(
    ids.map((id, index) => ({
      id,
      tool: id === 'w' ? 'put' : 'look',
      args: {},
      ...(index > 0 ? { dependsOn: [ids[index - 1] as string] } : {}),
    })),
  );
}

const countOf = (calls: readonly string[], stepId: string) => calls.filter((call) => call === stepId).length;

describe("durability: 'batched'", () => {
  it('commits a chain of idempotent steps in a few appends, with the same journal as step durability', async () => {
    const runs: { batches: number[]; result: RunResult; events: RunEvent[] }[] = [];
    for (const durability of ['step', 'batched'] as const) {
      const store = new CountingStore();
      const handle = dagEngine({ tools: lookAndPut([]), store, durability }).run(chainAround(150, 150), {
        runId: `run_${durability}`,
      });
      const result = await handle.result;
      runs.push({ batches: store.batches, result, events: await storedEvents(store, handle.runId) });
    }
    const [step, batched] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(step.result.status).toBe('completed');
    expect(batched.result.status).toBe('completed');
    // 301 steps: at least one commit per step with `step`; with `batched` the reads share commits.
    expect(step.batches.length).toBeGreaterThan(301);
    expect(batched.batches.length).toBeLessThan(20);
    // The same events in the same order; only the commit boundaries differ.
    const shape = (events: RunEvent[]) =>
      events.map((event) => `${event.seq} ${event.type} ${'stepId' in event ? event.stepId : ''}`);
    expect(shape(batched.events)).toEqual(shape(step.events));
    expect(batched.result.steps.map((result) => result.output)).toEqual(
      step.result.steps.map((result) => result.output),
    );
  });

  it(`lets at most ${BATCHED_EVENTS_MAX} events wait`, async () => {
    const store = new CountingStore();
    const plan = chainAround(1500, 0);
    const result = await dagEngine({ tools: lookAndPut([]), store, durability: 'batched' }).run(plan).result;
    expect(result.status).toBe('completed');
    // A step adds four events after the check: step-start, tool-call, tool-result, step-end.
    expect(Math.max(...store.batches)).toBeLessThanOrEqual(BATCHED_EVENTS_MAX + 4);
    expect(store.batches.length).toBeGreaterThanOrEqual(Math.floor((1501 * 4) / (BATCHED_EVENTS_MAX + 4)));
  });

  it(`lets no event wait much longer than ${BATCHED_WAIT_MAX_MS} ms behind steps that keep the thread busy`, async () => {
    const store = new CountingStore();
    // Each read holds the thread for 25 ms: no I/O wait lets a pending commit run in between.
    const registry = lookAndPut([], () => {
      const until = Date.now() + 25;
      while (Date.now() < until);
    });
    const result = await dagEngine({ tools: registry, store, durability: 'batched' }).run(chainAround(40, 0)).result;
    expect(result.status).toBe('completed');
    // 41 steps of 4 events are far below the event bound: without the time bound (and the turns the
    // scheduler gives the event loop between busy steps) there would be four appends (run-start,
    // the reads, the write's call, the end), the reads' events waiting about a second.
    expect(store.batches.length).toBeGreaterThan(4);
    // At most the bound plus the step that was running when it passed (125 ms here), far below the
    // second the reads' events would wait without it; the margin is for a loaded machine, where a
    // descheduled process adds wall time to every wait.
    expect(Math.max(...store.waits)).toBeLessThan(4 * (BATCHED_WAIT_MAX_MS + 25));
  });

  it('makes every earlier step and its own call durable before a non-idempotent tool runs', async () => {
    const store = new MemoryStore();
    let seen: RunEvent[] = [];
    let runId = '';
    const registry = lookAndPut([], async (stepId) => {
      if (stepId === 'w') seen = await storedEvents(store, runId);
    });
    const handle = dagEngine({ tools: registry, store, durability: 'batched' }).run(chainAround(200, 5));
    runId = handle.runId;
    expect((await handle.result).status).toBe('completed');
    const ended = new Set(seen.filter((event) => event.type === 'step-end').map((event) => event.stepId));
    for (let index = 0; index < 200; index++) expect(ended.has(`r${index}`)).toBe(true);
    expect(seen.at(-1)).toMatchObject({ type: 'tool-call', stepId: 'w' });
  });

  it('after a crash runs only idempotent steps again, never the write or a step before it', async () => {
    const inner = new MemoryStore();
    const store = new FreezableStore(inner);
    const calls: string[] = [];
    // The process "dies" inside r150: every later write hangs, as if the process were gone.
    const registry = lookAndPut(calls, (stepId) => {
      if (stepId !== 'r150' || store.frozen) return undefined;
      store.freeze();
      return new Promise(() => undefined);
    });
    const options: DagEngineOptions = { tools: registry, store, durability: 'batched', leaseTtlMs: 500 };
    const handle = dagEngine(options).run(chainAround(100, 100));
    while (!store.frozen) await pause(5);
    const before = await storedEvents(inner, handle.runId);
    const durableEnds = new Set(before.filter((event) => event.type === 'step-end').map((event) => event.stepId));

    const { result } = await resumeWhenFree({ ...options, store: inner }, handle.runId);
    expect(result.status).toBe('completed');
    expect(countOf(calls, 'w')).toBe(1);
    for (let index = 0; index < 100; index++) expect(countOf(calls, `r${index}`)).toBe(1);
    // Reads after the write whose end was not yet committed ran again: the trade `batched` makes.
    const again = Array.from({ length: 50 }, (_, index) => `r${100 + index}`).filter((id) => countOf(calls, id) === 2);
    expect(again.length).toBeGreaterThan(0);
    for (const id of again) expect(durableEnds.has(id)).toBe(false);
    const events = await storedEvents(inner, handle.runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  });

  it('fails the run with the store error and starts no write once a batched commit is refused', async () => {
    const store = new CountingStore();
    const calls: string[] = [];
    store.refuseAfter = 2; // run-start and the first batch of reads
    const handle = dagEngine({ tools: lookAndPut(calls), store, durability: 'batched' }).run(chainAround(600, 3));
    const outcome = await handle.result.then(
      (result) => result,
      (error: unknown) => error,
    );
    // The journal failed: the result rejects with the store's error.
    expect(StepwiseError.isInstance(outcome) ? outcome.code : outcome).toBe(ErrorCodes.STORE_UNAVAILABLE);
    expect(calls).not.toContain('w');
  });

  it('refuses an unknown durability with E601 naming the option', () => {
    expect(() => dagEngine({ tools: lookAndPut([]), durability: 'eventually' as never })).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID, location: 'durability' }),
    );
  });
});
