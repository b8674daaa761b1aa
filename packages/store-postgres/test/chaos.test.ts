import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, enqueue, type PostgresStore } from '../src/index.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../src/testing/index.js';
import { chainOf, createSideTables, query, spawnWorker, type WorkerProcess } from './worker-processes.js';

// 4 worker processes, 200 runs of 20 steps; a random worker is SIGKILLed about every 2 s and as the
// work passes each quarter, and restarted, and Postgres itself is restarted once. Bounded: the test fails after 10 minutes.
// STEPWISE_CHAOS_RUNS shrinks or grows the workload (e.g. on a slow machine).
const RUNS = Number(process.env.STEPWISE_CHAOS_RUNS ?? 200);
const STEPS = 20;
const WORKERS = 4;
const TTL = 2_000;
const LIMIT_MS = 600_000;

let server: ThrowawayPostgres | undefined;
try {
  server = await startThrowawayPostgres();
} catch (error) {
  console.warn(`store-postgres: skipping the chaos test: ${(error as Error).message}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!server)('chaos: workers killed at random, Postgres restarted', () => {
  const url = server?.url as string;
  const workers: WorkerProcess[] = [];
  let store: PostgresStore | undefined;
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.exited));
    await store?.close();
    server?.close();
  });

  it(
    'completes every run, runs no completed step twice, loses nothing, leaves no claim behind',
    async () => {
      const schema = 'chaos';
      const side = 'chaos_side';
      await createSideTables(url, side);
      store = createPostgresStore({ connectionString: url, schema });
      // The tool's own statements meet the Postgres restart too: it retries them, as a host's tool would.
      const chain = chainOf(STEPS, () => 'ledger_write');
      const retry = { maxAttempts: 8, initialDelayMs: 200, factor: 2, maxDelayMs: 2_000 };
      const plan = { ...chain, steps: chain.steps.map((step) => ({ ...step, retry })) };
      const runIds: string[] = [];
      for (let index = 0; index < RUNS; index++) runIds.push((await enqueue(plan, { store })).runId);
      const env = { STEPWISE_PG_URL: url, STEPWISE_PG_SCHEMA: schema, SIDE_SCHEMA: side, LEASE_TTL_MS: String(TTL) };
      const live: WorkerProcess[] = [];
      const spawn = () => {
        const worker = spawnWorker({ ...env, CONCURRENCY: '4' });
        workers.push(worker);
        live.push(worker);
        return worker;
      };
      for (let index = 0; index < WORKERS; index++) spawn();
      await Promise.all(live.map((worker) => worker.ready));

      const started = Date.now();
      const killed: string[] = [];
      let restartedPostgres = false;
      let done = 0;
      const nextKillTime = () => Date.now() + 1_500 + Math.random() * 1_000;
      let killAt = nextKillTime();
      // A kill is also due as the work passes each quarter: on a fast machine the whole workload
      // can end within three of the timed kills, and the test needs at least three.
      let nextQuarter = RUNS / 4;
      while (Date.now() - started < LIMIT_MS) {
        await sleep(250);
        const rows = await query<{ done: number }>(
          url,
          `select count(*)::int as done from ${schema}.work_queue where state = 'done'`,
        ).catch(() => [{ done }]);
        done = rows[0]?.done ?? done;
        if (done === RUNS) break;
        const quarterPassed = done >= nextQuarter;
        if (Date.now() < killAt && !quarterPassed) continue;
        while (done >= nextQuarter) nextQuarter += RUNS / 4;
        killAt = nextKillTime();
        const victim = live.splice(Math.floor(Math.random() * live.length), 1)[0] as WorkerProcess;
        killed.push(await victim.ready);
        victim.child.kill('SIGKILL');
        spawn();
        if (!restartedPostgres && done >= RUNS / 3) {
          restartedPostgres = true;
          server?.stop();
          await sleep(500);
          server?.start();
        }
      }
      const elapsedMs = Date.now() - started;
      expect(done, `only ${done} of ${RUNS} runs ended within ${LIMIT_MS} ms`).toBe(RUNS);
      expect(restartedPostgres).toBe(true);
      expect(killed.length).toBeGreaterThanOrEqual(3);

      // Every run completed; none lost.
      const runs = await store.listRuns({ limit: RUNS + 10 });
      expect(runs.length).toBe(RUNS);
      expect(runs.filter((run) => run.status !== 'completed').map((run) => [run.runId, run.status])).toEqual([]);
      expect(runs.every((run) => run.stepCounts.succeeded === STEPS)).toBe(true);
      const ledger = await query<{ rows: number }>(url, `select count(*)::int as rows from ${side}.ledger`);
      expect(ledger[0]?.rows).toBe(RUNS * STEPS);

      // No attempt ended twice, no step succeeded twice (a step ends once per attempt: its tool
      // retries what the restart fails), and no tool ran again once its step had succeeded. An event's
      // `at` has millisecond precision and the invocation's microsecond: a call in the same millisecond
      // as its own step's end (a quick step) is compared at the event's precision.
      const doubleEnds = await query(
        url,
        `select run_id, payload->>'stepId' as step_id, payload->'result'->>'attempt' as attempt from ${schema}.events
         where type = 'step-end' group by 1, 2, 3 having count(*) > 1`,
      );
      expect(doubleEnds).toEqual([]);
      const doubleSuccesses = await query(
        url,
        `select run_id, payload->>'stepId' as step_id from ${schema}.events
         where type = 'step-end' and payload->'result'->>'status' = 'succeeded' group by 1, 2 having count(*) > 1`,
      );
      expect(doubleSuccesses).toEqual([]);
      const afterSuccess = await query(
        url,
        `select i.run_id, i.step_id from ${side}.invocations i join ${schema}.events e
           on e.run_id = i.run_id and e.type = 'step-end' and e.payload->>'stepId' = i.step_id
         where e.payload->'result'->>'status' = 'succeeded' and date_trunc('milliseconds', i.at) > e.at`,
      );
      expect(afterSuccess).toEqual([]);

      // No claim or live lease left behind by a dead worker once the TTL passed. A worker killed
      // between committing run-end and releasing its lease leaves the lease columns set; they
      // expired with the TTL and hold nothing (any acquire takes an expired lease).
      await sleep(TTL);
      const claimed = await query(url, `select run_id, claimed_by from ${schema}.work_queue where state <> 'done'`);
      expect(claimed).toEqual([]);
      const leased = await query(
        url,
        `select id from ${schema}.runs where lease_owner is not null and lease_expires_at > clock_timestamp()`,
      );
      expect(leased).toEqual([]);

      const invocations = await query<{ calls: number }>(url, `select count(*)::int as calls from ${side}.invocations`);
      const takeovers = await query<{ resumes: number }>(
        url,
        `select count(*)::int as resumes from ${schema}.events where type = 'run-resume'`,
      );
      console.log(
        `chaos: ${RUNS} runs × ${STEPS} steps in ${(elapsedMs / 1000).toFixed(1)} s; ${killed.length} workers SIGKILLed, Postgres restarted once; ` +
          `${takeovers[0]?.resumes} resumes; ${(invocations[0]?.calls ?? 0) - RUNS * STEPS} in-flight idempotent calls re-run; ` +
          `0 attempts ended twice; 0 runs lost`,
      );
    },
    LIMIT_MS + 60_000,
  );
});

if (!server) {
  describe('chaos', () => {
    it.skip('needs Postgres binaries (see the message above)', () => undefined);
  });
}
