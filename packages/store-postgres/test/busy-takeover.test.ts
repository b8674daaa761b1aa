import { readAll } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, enqueue, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { createSideTables, query, spawnWorker, until, type WorkerProcess } from './worker-processes.js';

const postgres = await testPostgres();
const TTL = 1_500;
const CONCURRENCY = 2;
const STEP_MS = 12_000;

describe.skipIf(!postgres)('takeover while every worker is busy (real worker processes)', () => {
  const url = postgres?.url as string;
  const processes: WorkerProcess[] = [];
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    for (const worker of processes) worker.child.kill('SIGKILL');
    await Promise.all(processes.map((worker) => worker.exited));
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });

  it('resumes every run of a SIGKILLed worker once its lease expires although no worker has a free slot', async () => {
    const name = `busy_takeover_${process.pid}`;
    const side = `${name}_side`;
    await createSideTables(url, side);
    const store = createPostgresStore({ connectionString: url, schema: name });
    stores.push(store);
    const env = {
      STEPWISE_PG_URL: url,
      STEPWISE_PG_SCHEMA: name,
      SIDE_SCHEMA: side,
      LEASE_TTL_MS: String(TTL),
      CONCURRENCY: String(CONCURRENCY),
    };
    const workers = [spawnWorker(env), spawnWorker(env), spawnWorker(env)];
    processes.push(...workers);
    const owners = await Promise.all(workers.map((worker) => worker.ready));
    // Twice what the workers hold: fresh runs still wait in the queue when the orphans appear.
    const plan = makePlan([{ id: 'long', tool: 'ledger_write', args: { sleepMs: STEP_MS } }]);
    for (let index = 0; index < 2 * owners.length * CONCURRENCY; index++) await enqueue(plan, { store });
    const held = await until(
      async () => {
        const rows = await query<{ run_id: string; claimed_by: string }>(
          url,
          `select w.run_id, w.claimed_by from ${name}.work_queue w where w.state = 'claimed'
             and exists (select 1 from ${side}.invocations i where i.run_id = w.run_id)`,
        );
        return rows.length === owners.length * CONCURRENCY ? rows : undefined;
      },
      30_000,
      'every worker to run its runs',
    );
    const victim = workers[0] as WorkerProcess;
    const orphans = held.filter((row) => row.claimed_by === owners[0]).map((row) => row.run_id);
    expect(orphans).toHaveLength(CONCURRENCY);
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    await victim.exited;

    const resumedAt = await until(
      async () => {
        const times = await Promise.all(
          orphans.map(async (runId) => (await readAll(store, runId)).find((event) => event.type === 'run-resume')?.at),
        );
        return times.every((at) => at !== undefined) ? times.map((at) => Date.parse(at as string)) : undefined;
      },
      10 * TTL,
      'the orphaned runs to be resumed',
    );
    // The lease expires at most one TTL after the kill; waiting for a free slot instead would take
    // STEP_MS (8× the TTL). Half of STEP_MS tells the two apart and leaves room for a loaded machine,
    // where the survivors' polls and the resume itself can be late by seconds.
    for (const at of resumedAt) expect(at - killedAt).toBeLessThan(STEP_MS / 2);
    // Nothing had ended: the survivors took the orphans over beyond their concurrency, not in freed
    // slots. (A claim made while an orphan's run lease was still live gives it back: `requeued`.)
    const ended = workers.slice(1).flatMap((worker) => worker.ends.filter((end) => end.status !== 'requeued'));
    expect(ended).toEqual([]);
    const queued = await query<{ count: number }>(
      url,
      `select count(*)::int as count from ${name}.work_queue where state = 'queued'`,
    );
    expect(queued[0]?.count).toBe(owners.length * CONCURRENCY);
  }, 90_000);
});

if (!postgres) {
  describe('takeover while every worker is busy', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}
