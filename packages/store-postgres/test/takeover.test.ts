import { ErrorCodes, readAll } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, enqueue, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { createSideTables, query, spawnWorker, until, type WorkerProcess } from './worker-processes.js';

const postgres = await testPostgres();
const TTL = 1_500;
// The lease expires at most one TTL after the kill; the rest is the survivor's poll and the resume,
// which a loaded machine can delay by seconds. Far below s1's 60 s sleep and the 30 s default lease.
const TAKEOVER_BOUND_MS = 4 * TTL;
let tag = 0;

describe.skipIf(!postgres)('takeover after SIGKILL (real worker processes)', () => {
  const url = postgres?.url as string;
  const processes: WorkerProcess[] = [];
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    for (const worker of processes) worker.child.kill('SIGKILL');
    await Promise.all(processes.map((worker) => worker.exited));
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });

  /** One run whose middle step (`tool`) blocks on its first call; the worker holding it is killed there. */
  async function killMidStep(tool: string, args: Record<string, unknown> = {}) {
    const name = `takeover_${process.pid}_${tag++}`;
    const side = `${name}_side`;
    await createSideTables(url, side);
    const store = createPostgresStore({ connectionString: url, schema: name });
    stores.push(store);
    const plan = makePlan([
      { id: 's0', tool: 'ledger_write' },
      { id: 's1', tool, args: { firstCallSleepMs: 60_000, ...args }, dependsOn: ['s0'] },
      { id: 's2', tool: 'ledger_write', dependsOn: ['s1'] },
    ]);
    const { runId } = await enqueue(plan, { store });
    const env = { STEPWISE_PG_URL: url, STEPWISE_PG_SCHEMA: name, SIDE_SCHEMA: side, LEASE_TTL_MS: String(TTL) };
    const first = spawnWorker(env);
    processes.push(first);
    await first.ready;
    await until(
      async () => (await query(url, `select 1 from ${side}.invocations where step_id = 's1'`)).length > 0 || undefined,
      20_000,
      'the first worker to start s1',
    );
    // The second worker is already polling: what follows is the automatic takeover, no call from us.
    const second = spawnWorker(env);
    processes.push(second);
    await second.ready;
    first.child.kill('SIGKILL');
    const killedAt = Date.now();
    await first.exited;
    const summary = await until(
      async () => {
        const run = await store.getRun(runId);
        return run && run.status !== 'running' ? run : undefined;
      },
      TTL * 10,
      'the run to end on the second worker',
    );
    const events = await readAll(store, runId);
    const resumedAt = Date.parse(events.find((event) => event.type === 'run-resume')?.at ?? '');
    const invocations = await query<{ step_id: string; calls: number }>(
      url,
      `select step_id, count(*)::int as calls from ${side}.invocations group by step_id order by step_id`,
    );
    const queued = await store.db.selectFrom('work_queue').selectAll().where('run_id', '=', runId).executeTakeFirst();
    return { summary, events, takeoverMs: resumedAt - killedAt, invocations, queued, side };
  }

  it('resumes a dead worker’s run once its lease expires and re-runs only the in-flight idempotent step', async () => {
    const outcome = await killMidStep('ledger_write');
    expect(outcome.summary.status).toBe('completed');
    expect(outcome.takeoverMs).toBeGreaterThan(0);
    expect(outcome.takeoverMs).toBeLessThan(TAKEOVER_BOUND_MS);
    expect(outcome.invocations).toEqual([
      { step_id: 's0', calls: 1 },
      { step_id: 's1', calls: 2 },
      { step_id: 's2', calls: 1 },
    ]);
    expect(await query(url, `select step_id from ${outcome.side}.ledger order by step_id`)).toEqual([
      { step_id: 's0' },
      { step_id: 's1' },
      { step_id: 's2' },
    ]);
    expect(outcome.queued?.state).toBe('done');
    // The dead worker's claim and the taker's. A claim made while the dead worker's run lease was
    // still live hands the run back to the queue (by design) and counts as one more: the
    // invocations above, not this count, are what prove nothing ran twice.
    expect(outcome.queued?.claims).toBeGreaterThanOrEqual(2);
    expect(outcome.queued?.claims).toBeLessThanOrEqual(4);
  }, 60_000);

  it('never runs an in-flight non-idempotent step again: it fails as interrupted', async () => {
    const outcome = await killMidStep('notify_once');
    expect(outcome.summary.status).toBe('failed');
    const ended = outcome.events.find((event) => event.type === 'step-end' && event.stepId === 's1');
    expect((ended as { result?: { error?: { code?: string } } }).result?.error?.code).toBe(ErrorCodes.STEP_INTERRUPTED);
    expect(outcome.invocations).toEqual([
      { step_id: 's0', calls: 1 },
      { step_id: 's1', calls: 1 },
    ]);
    expect(outcome.takeoverMs).toBeLessThan(TAKEOVER_BOUND_MS);
  }, 60_000);

  it('asks a reconciling tool about its in-flight call: the payment row was written, so the step succeeds without a second call', async () => {
    const outcome = await killMidStep('payment_insert');
    expect(outcome.summary.status).toBe('completed');
    const resume = outcome.events.find((event) => event.type === 'run-resume');
    expect(resume).toMatchObject({ interrupted: [{ stepId: 's1', action: 'reconcile' }] });
    const results = outcome.events.filter((event) => event.type === 'tool-result' && event.stepId === 's1');
    const payments = await query<{ idempotency_key: string }>(
      url,
      `select idempotency_key from ${outcome.side}.payments`,
    );
    expect(payments).toHaveLength(1);
    expect(results).toEqual([
      expect.objectContaining({
        status: 'succeeded',
        reconciled: true,
        output: { paymentKey: payments[0]?.idempotency_key },
      }),
    ]);
    expect(outcome.invocations).toEqual([
      { step_id: 's0', calls: 1 },
      { step_id: 's1', calls: 1 },
      { step_id: 's2', calls: 1 },
    ]);
  }, 60_000);

  it('asks a reconciling tool about its in-flight call: no payment row, so the step runs again under the same key', async () => {
    const outcome = await killMidStep('payment_insert', { crashBeforeEffect: true });
    expect(outcome.summary.status).toBe('completed');
    const payments = await query<{ idempotency_key: string }>(
      url,
      `select idempotency_key from ${outcome.side}.payments`,
    );
    expect(payments).toHaveLength(1);
    const s1 = outcome.events.filter((event) => event.type === 'tool-call' && event.stepId === 's1');
    expect(s1.map((event) => (event as { attempt: number }).attempt)).toEqual([1, 2]);
    expect(outcome.invocations).toEqual([
      { step_id: 's0', calls: 1 },
      { step_id: 's1', calls: 2 },
      { step_id: 's2', calls: 1 },
    ]);
  }, 60_000);
});

if (!postgres) {
  describe('takeover after SIGKILL', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}
