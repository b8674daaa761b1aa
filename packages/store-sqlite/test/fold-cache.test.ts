import { MemoryStore, type RunEvent } from '@stepwise/core';
import type { RunEventInput } from '@stepwise/core/engine';
import { applyEvent, FoldChanges } from '@stepwise/core/store';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { RunFolds } from '../src/run-folds.js';
import { stamp } from './helpers.js';

const runId = 'run_cache';
const call = (stepId: string, attempt = 1): RunEventInput[] => [
  { type: 'step-start', stepId, tool: 'echo', attempt, executionId: `ex_${stepId}_${attempt}` },
  {
    type: 'tool-call',
    stepId,
    executionId: `ex_${stepId}_${attempt}`,
    attempt,
    tool: 'echo',
    effect: 'read',
    idempotent: true,
    args: { stepId },
  },
];
const result = (stepId: string, output: unknown, attempt = 1): RunEventInput => ({
  type: 'tool-result',
  stepId,
  executionId: `ex_${stepId}_${attempt}`,
  tool: 'echo',
  status: 'succeeded',
  output,
  startedAt: '2026-11-27T10:00:00.000Z',
  durationMs: 1,
});
const end = (stepId: string, output: unknown, attempt = 1): RunEventInput => ({
  type: 'step-end',
  stepId,
  result: {
    stepId,
    tool: 'echo',
    status: 'succeeded',
    attempt,
    executionId: `ex_${stepId}_${attempt}`,
    output,
    startedAt: '2026-11-27T10:00:00.000Z',
    durationMs: 1,
  },
});
const start: RunEventInput = {
  type: 'run-start',
  planId: 'p',
  planDigest: 'd',
  plan: {
    id: 'p',
    version: 1,
    steps: ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id, tool: 'echo' })),
  },
  engine: 'test',
};

/** The batches, stamped in order from seq 1. */
function batches(...inputs: RunEventInput[][]): RunEvent[][] {
  let seq = 1;
  return inputs.map((batch) => {
    const stamped = stamp(runId, seq, batch);
    seq += batch.length;
    return stamped;
  });
}

/**
 * A fold cache over `journal` (the batches in order), appended to as the store's writer does: take,
 * apply the batch, keep. `reads()`: how many pages it read from the journal. `forgetCallsAt`: 1,
 * a pass over the calls at the first batch (the store waits for 64 calls).
 */
function cacheOver(journal: readonly RunEvent[], forgetCallsAt = 1) {
  let reads = 0;
  const folds = new RunFolds(
    10,
    (_, afterSeq, limit) => {
      reads++;
      return journal.filter((e) => e.seq > afterSeq).slice(0, limit);
    },
    forgetCallsAt,
  );
  let lastSeq = 0;
  return {
    reads: () => reads,
    append(events: readonly RunEvent[]) {
      const fold = folds.take(runId, lastSeq, events);
      const changes = new FoldChanges();
      for (const event of events) applyEvent(fold, event, changes);
      folds.keep(fold, changes);
      lastSeq += events.length;
      return fold;
    },
  };
}

describe("the writer's caches", () => {
  it('forgets a call once its step has ended, and keeps calls still running or whose step has not ended', () => {
    const [first, second, third] = batches(
      [start, ...call('a'), result('a', { n: 1 }), end('a', { n: 1 }), ...call('b'), ...call('c')],
      [result('c', { n: 3 }), ...call('d'), result('d', { n: 4 }), end('d', { n: 4 })],
      [end('c', { n: 3 }), ...call('e'), result('e', { n: 5 }), end('e', { n: 5 })],
    ) as [RunEvent[], RunEvent[], RunEvent[]];
    const cache = cacheOver([...first, ...second, ...third]);
    let fold = cache.append(first);
    // a ended: its call and its copy of the result are gone; b's call is running.
    expect([...fold.executions.keys()]).toEqual(['ex_b_1', 'ex_c_1']);
    expect(fold.steps.get('a')?.toolResult).toBeUndefined();
    expect(fold.steps.get('a')?.result?.output).toEqual({ n: 1 });

    fold = cache.append(second);
    // The cached fold went on: d's result follows its call in the batch, which forgets nothing.
    expect(cache.reads()).toBe(0);
    // Three calls, fewer than twice the two the last pass kept: no pass, d's call stays for now
    // (its step's copy of the result goes at once).
    expect([...fold.executions.keys()]).toEqual(['ex_b_1', 'ex_c_1', 'ex_d_1']);
    expect(fold.steps.get('d')?.toolResult).toBeUndefined();
    // c has its result but has not ended: a step-end in a later batch still compares outputs with it.
    expect(fold.executions.get('ex_c_1')?.output).toEqual({ n: 3 });

    fold = cache.append(third);
    expect(cache.reads()).toBe(0);
    // Four: a pass, which keeps only the running call.
    expect([...fold.executions.keys()]).toEqual(['ex_b_1']);
  });

  it('holds no more than its threshold of calls through a long run, whose every step ends', () => {
    const ids = Array.from({ length: 300 }, (_, index) => `s${index}`);
    const long: RunEventInput = {
      ...start,
      plan: { id: 'p', version: 1, steps: ids.map((id) => ({ id, tool: 'echo' })) },
    };
    const all = batches([long], ...ids.map((id) => [...call(id), result(id, { id }), end(id, { id })]));
    // The store's threshold, 4; and a larger one.
    for (const [threshold, last] of [
      [4, 0],
      [64, 300 - 4 * 64],
    ] as const) {
      const cache = cacheOver(all.flat(), threshold);
      const sizes = all.map((batch) => cache.append(batch).executions.size);
      // A pass as the threshold's call is kept, down to none.
      expect(Math.max(...sizes)).toBe(threshold - 1);
      expect(sizes.at(-1)).toBe(last);
      expect(cache.reads()).toBe(0);
    }
  });

  it('folds afresh from the journal when a batch names a call it forgot, then keeps the calls', () => {
    const [first, late, after] = batches(
      [start, ...call('a'), result('a', { n: 1 }), end('a', { n: 1 })],
      // A second result for the ended call: the kernel never writes one, a journal may hold one.
      [result('a', { n: 2 })],
      [...call('b'), result('b', { n: 4 }), end('b', { n: 4 })],
    ) as [RunEvent[], RunEvent[], RunEvent[]];
    const cache = cacheOver([...first, ...late, ...after]);
    cache.append(first);
    expect(cache.reads()).toBe(0);
    const refolded = cache.append(late);
    expect(cache.reads()).toBeGreaterThan(0);
    expect(refolded.executions.get('ex_a_1')?.output).toEqual({ n: 2 });
    const kept = cache.append(after);
    expect([...kept.executions.keys()]).toEqual(['ex_a_1', 'ex_b_1']);
  });

  it('finds the calls of a large batch (calls first, results after) without folding again, and a dropped one in it', () => {
    const ids = Array.from({ length: 20 }, (_, index) => `s${index}`);
    const wide: RunEventInput = {
      ...start,
      plan: { id: 'p', version: 1, steps: ids.map((id) => ({ id, tool: 'echo' })) },
    };
    const [first, fanned, late] = batches(
      [wide],
      [...ids.flatMap((id) => call(id)), ...ids.flatMap((id) => [result(id, { id }), end(id, { id })])],
      [
        ...ids.slice(0, 9).map((id) => result(id, { late: id })),
        ...ids.slice(0, 9).map((id) => result(id, { again: id })),
      ],
    ) as [RunEvent[], RunEvent[], RunEvent[]];
    const cache = cacheOver([...first, ...fanned, ...late]);
    cache.append(first);
    expect(cache.append(fanned).executions.size).toBe(0);
    expect(cache.reads()).toBe(0);
    // 18 results of calls the fold dropped: folded afresh from the journal, every call kept.
    const refolded = cache.append(late);
    expect(cache.reads()).toBeGreaterThan(0);
    expect(refolded.executions.get('ex_s0_1')?.output).toEqual({ again: 's0' });
    expect(refolded.executions.size).toBe(20);
  });

  it('gives the store the same rows as a fold of the whole journal when a late result names a forgotten call', async () => {
    const sqlite = createSqliteStore({ path: ':memory:' });
    const memory = new MemoryStore();
    const all = batches(
      [start, ...call('a'), result('a', { n: 1 }), end('a', { n: 1 })],
      [result('a', { n: 2 })],
      [...call('b')],
    );
    for (const batch of all) {
      await sqlite.append(runId, batch);
      await memory.append(runId, batch);
    }
    const fromSqlite = await sqlite.getExecution('ex_a_1');
    expect(fromSqlite?.output).toEqual({ n: 2 });
    expect(fromSqlite).toEqual(await memory.getExecution('ex_a_1'));
    await sqlite.close();
  });

  it("reads a plan object's steps afresh in each run: a host may change the object between runs", async () => {
    const sqlite = createSqliteStore({ path: ':memory:' });
    const plan = { id: 'p', version: 1, steps: [{ id: 'a', tool: 'echo', description: 'first' }] };
    const runStart = (id: string): RunEvent[] =>
      stamp(id, 1, [{ type: 'run-start', planId: 'p', planDigest: 'd', plan, engine: 'test' }]);
    await sqlite.append('run_one', runStart('run_one'));
    plan.steps.unshift({ id: 'b', tool: 'echo', description: 'added' });
    (plan.steps[1] as { description: string }).description = 'first, edited';
    await sqlite.append('run_two', runStart('run_two'));
    const described = (steps: { stepId: string; description: string | undefined }[]) =>
      steps.map((step) => [step.stepId, step.description]);
    expect(described(await sqlite.listSteps('run_one'))).toEqual([['a', 'first']]);
    expect(described(await sqlite.listSteps('run_two'))).toEqual([
      ['b', 'added'],
      ['a', 'first, edited'],
    ]);
    await sqlite.close();
  });
});
