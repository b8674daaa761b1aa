import { ErrorCodes, readAll } from '@stepwise/core';
import { cancelRun, type RunEndEvent } from '@stepwise/core/store';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, enqueue, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { createSideTables, query, spawnWorker, until, type WorkerProcess } from './worker-processes.js';

const postgres = await testPostgres();
const TTL = 1_500;
let tag = 0;

describe.skipIf(!postgres)('cancelRun against Postgres (real worker processes)', () => {
  const url = postgres?.url as string;
  const processes: WorkerProcess[] = [];
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    for (const worker of processes) worker.child.kill('SIGKILL');
    await Promise.all(processes.map((worker) => worker.exited));
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });

  async function setUp() {
    const name = `cancel_${process.pid}_${tag++}`;
    const side = `${name}_side`;
    await createSideTables(url, side);
    const store = createPostgresStore({ connectionString: url, schema: name });
    stores.push(store);
    const env = { STEPWISE_PG_URL: url, STEPWISE_PG_SCHEMA: name, SIDE_SCHEMA: side, LEASE_TTL_MS: String(TTL) };
    const startWorker = async () => {
      const worker = spawnWorker(env);
      processes.push(worker);
      await worker.ready;
      return worker;
    };
    return { store, side, startWorker };
  }

  const plan = makePlan([
    { id: 's0', tool: 'ledger_write' },
    { id: 's1', tool: 'ledger_write', args: { sleepMs: 60_000 }, dependsOn: ['s0'] },
    { id: 's2', tool: 'ledger_write', dependsOn: ['s1'] },
  ]);

  it('cancels a run a worker process is running, within a few lease renewals; run-end names who asked', async () => {
    const { store, side, startWorker } = await setUp();
    const { runId } = await enqueue(plan, { store });
    const worker = await startWorker();
    await until(
      async () => (await query(url, `select 1 from ${side}.invocations where step_id = 's1'`)).length > 0 || undefined,
      20_000,
      'the worker to start s1',
    );
    const asked = Date.now();
    const outcome = await cancelRun(store, runId, { by: 'ops', reason: 'stop it' });
    expect(outcome.outcome).toBe('requested');
    await until(async () => worker.ends.find((end) => end.runId === runId), 10 * TTL, 'the run to end');
    // Renewed every TTL/3 (500 ms): far below s1's 60 s sleep.
    expect(Date.now() - asked).toBeLessThan(4 * TTL);
    expect(worker.ends).toEqual([{ runId, status: 'cancelled' }]);
    const events = await readAll(store, runId);
    const end = events.at(-1) as RunEndEvent;
    expect([end.type, end.status, end.by, end.reason]).toEqual(['run-end', 'cancelled', 'ops', 'stop it']);
    const s1End = events.find((event) => event.type === 'step-end' && event.stepId === 's1');
    expect(s1End).toMatchObject({ result: { status: 'cancelled', error: { code: ErrorCodes.STEP_CANCELLED } } });
    expect(await query(url, `select * from ${store.connection.schema}.cancel_requests`)).toEqual([]);
    expect((await query(url, `select step_id from ${side}.invocations where step_id = 's2'`)).length).toBe(0);
  });

  it('cancels a queued run before any worker claims it: the worker that claims it ends it at once', async () => {
    const { store, side, startWorker } = await setUp();
    const { runId } = await enqueue(plan, { store });
    const outcome = await cancelRun(store, runId, { by: 'ops' });
    expect(outcome.outcome).toBe('requested');
    const worker = await startWorker();
    await until(async () => worker.ends.find((end) => end.runId === runId), 10 * TTL, 'the run to end');
    expect(worker.ends).toEqual([{ runId, status: 'cancelled' }]);
    expect((await readAll(store, runId)).at(-1)).toMatchObject({ type: 'run-end', status: 'cancelled', by: 'ops' });
    // Not one tool ran.
    expect(await query(url, `select * from ${side}.invocations`)).toEqual([]);
    await expect(cancelRun(store, runId, { by: 'ops' })).rejects.toMatchObject({ code: ErrorCodes.RUN_ENDED });
  });
});
