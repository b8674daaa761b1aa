import { ErrorCodes, type RunEvent, readAll, StepwiseError } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { testPostgres } from './postgres-server.js';
import { workerHarness } from './worker-harness.js';

const postgres = await testPostgres();
const plan = makePlan([{ id: 'a', tool: 'echo', args: {} }], { id: 'plan_group' });
const at = () => new Date().toISOString();
const runStart = (runId: string): RunEvent =>
  ({
    type: 'run-start',
    runId,
    seq: 1,
    at: at(),
    planId: plan.id,
    planDigest: 'digest',
    plan,
    engine: 'dag',
  }) as RunEvent;
const stepStart = (runId: string, seq: number, stepId = 'a'): RunEvent =>
  ({
    type: 'step-start',
    runId,
    seq,
    at: at(),
    stepId,
    tool: 'echo',
    attempt: 1,
    executionId: `ex_${runId}_${seq}`,
  }) as RunEvent;

async function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: unknown) => (StepwiseError.isInstance(error) ? error.code : String(error)),
  );
}

describe.skipIf(!postgres)('group commit of one process’s appends', () => {
  const harness = workerHarness(postgres);

  function open(schema: string) {
    return harness.countingStore(schema, {
      commits: /^\s*commit\s*$/i,
      begins: /^\s*begin\s*$/i,
      writes: /insert into "[a-z_0-9]+"\."events"/,
      locks: /insert into "[a-z_0-9]+"\."runs" as r \(id\) select/,
    });
  }

  it('commits appends of many runs that come while one is in flight together, each still ordered and checked', async () => {
    const { store, counts } = await open(`group_${process.pid}`);
    const runIds = Array.from({ length: 12 }, (_, index) => `run_group_${index}`);
    const before = { ...counts };
    // A seq taken by nobody (a gap) is refused alone; the others commit.
    const outcomes = await Promise.all([
      ...runIds.map((runId) => outcome(store.append(runId, [runStart(runId)]))),
      outcome(store.append('run_gap', [stepStart('run_gap', 5)])),
    ]);
    expect(outcomes).toEqual([...runIds.map(() => 'ok'), ErrorCodes.JOURNAL_CONFLICT]);
    // The first append runs at once, alone; the rest wait for it and share the next commit, and
    // one statement locks their runs' rows, one writes all their rows.
    expect(counts.commits - before.commits).toBeLessThanOrEqual(3);
    expect(counts.writes - before.writes).toBeGreaterThan(0);
    expect(counts.writes - before.writes).toBeLessThanOrEqual(3);
    expect(counts.locks - before.locks).toBeGreaterThan(0);
    expect(counts.locks - before.locks).toBeLessThanOrEqual(3);
    for (const runId of runIds) expect((await readAll(store, runId)).map((event) => event.seq)).toEqual([1]);
    expect(await readAll(store, 'run_gap')).toEqual([]);

    // The next batch continues every run from its cached fold.
    const next = await Promise.all(runIds.map((runId) => outcome(store.append(runId, [stepStart(runId, 2)]))));
    expect(next.every((value) => value === 'ok')).toBe(true);
    for (const runId of runIds) expect((await store.getRun(runId))?.stepCounts.running).toBe(1);
  });

  it('writes leased appends that continue their runs with one statement and no transaction, and fences them in it', async () => {
    const { store, counts } = await open(`group_fenced_${process.pid}`);
    const runIds = Array.from({ length: 8 }, (_, index) => `run_fenced_${index}`);
    const leases = await Promise.all(runIds.map((runId) => store.acquireLease(runId, 'owner', 30_000)));
    await Promise.all(runIds.map((runId, index) => store.append(runId, [runStart(runId)], leases[index])));
    const before = { ...counts };
    const outcomes = await Promise.all(
      runIds.map((runId, index) => outcome(store.append(runId, [stepStart(runId, 2)], leases[index]))),
    );
    expect(outcomes.every((value) => value === 'ok')).toBe(true);
    expect(counts.begins - before.begins).toBe(0);
    expect(counts.writes - before.writes).toBeGreaterThan(0);
    expect(counts.writes - before.writes).toBeLessThanOrEqual(3);
    for (const runId of runIds) expect((await readAll(store, runId)).map((event) => event.seq)).toEqual([1, 2]);
    // Another owner takes one run over: the old lease's next append is refused (E501), nothing written.
    const taken = runIds[0] as string;
    await store.db
      .updateTable('runs')
      .set({ lease_expires_at: new Date(0).toISOString() })
      .where('id', '=', taken)
      .execute();
    const newer = await store.acquireLease(taken, 'other', 30_000);
    expect(newer).toBeDefined();
    expect(await outcome(store.append(taken, [stepStart(taken, 3)], leases[0]))).toBe(ErrorCodes.LEASE_CONFLICT);
    expect((await readAll(store, taken)).map((event) => event.seq)).toEqual([1, 2]);
  });

  it('runs the others again on their own when one write fails, so only that append fails', async () => {
    const { store } = await open(`group_failure_${process.pid}`);
    const runIds = Array.from({ length: 6 }, (_, index) => `run_failure_${index}`);
    await Promise.all(runIds.map((runId) => store.append(runId, [runStart(runId)])));
    // A NUL character cannot be stored in a text column: that write fails inside the shared transaction.
    const outcomes = await Promise.all(
      runIds.map((runId, index) =>
        outcome(store.append(runId, [stepStart(runId, 2, index === 3 ? 'bad\u0000step' : 'a')])),
      ),
    );
    expect(outcomes.filter((value) => value === 'ok')).toHaveLength(5);
    expect(outcomes[3]).not.toBe('ok');
    for (const [index, runId] of runIds.entries()) {
      const seqs = (await readAll(store, runId)).map((event) => event.seq);
      expect(seqs).toEqual(index === 3 ? [1] : [1, 2]);
    }
    // The failed run goes on once given a good batch.
    await store.append(runIds[3] as string, [stepStart(runIds[3] as string, 2)]);
    expect((await readAll(store, runIds[3] as string)).map((event) => event.seq)).toEqual([1, 2]);
  });
});

if (!postgres) {
  describe('group commit of one process’s appends', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}
