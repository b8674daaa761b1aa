// Chaos run of @stepwise/store-postgres workers: 3 worker processes (4 runs at once each) over runs of
// 10 steps; a random worker is SIGKILLed (and started again) every 3–6 s, one worker is SIGSTOPped for
// 3× the lease TTL, and Postgres is restarted once. Then it reports, from the journal, the queue and
// the tools' side tables:
//   lost        runs the queue does not hold as ended
//   stuck       runs still claimed by a claim that expired, or queued as ended while their journal is not
//   doubled     non-idempotent effects performed twice for one step (a notification sent twice)
//   re-asked    calls of the keyed payment tool for a payment already made (its unique key kept the
//               effect single): a paused worker's tool that ignores its signal, woken after takeover
//   E309 never started   steps failed as interrupted whose tool body never began
// Two kinds of runs: "reconciling" (idempotent and reconciling tools: every run should complete) and
// "plain" (a non-idempotent tool that cannot reconcile: a kill mid-call fails its run with E309).
//
//   node bench/store-postgres/chaos.mjs [runs] [steps]     (default 60 × 10; build the packages first)

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, readAll } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { createPostgresStore, enqueue } from '@stepwise/store-postgres';
import { startThrowawayPostgres } from '@stepwise/store-postgres/testing';
import pg from 'pg';

const RUNS = Number(process.argv[2] ?? 60);
const STEPS = Number(process.argv[3] ?? 10);
const WORKERS = 3;
const TTL = 1_500;
const LIMIT_MS = 600_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const random = (min, max) => min + Math.floor(Math.random() * (max - min));

const server = await startThrowawayPostgres();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    server.close();
    process.exit(1);
  });
}
const schema = 'chaos';
const side = 'chaos_side';
const admin = new pg.Client(server.url);
await admin.connect();
await admin.query(`create schema ${side}`);
await admin.query(`create table ${side}.invocations (run_id text, step_id text, execution_id text, pid int)`);
await admin.query(`create table ${side}.ledger (run_id text, step_id text, primary key (run_id, step_id))`);
await admin.query(`create table ${side}.notifications (run_id text, step_id text)`);
await admin.query(`create table ${side}.payments (idempotency_key text primary key, run_id text, step_id text)`);
await admin.query(`create table ${side}.doubled (run_id text, step_id text, pid int)`);
await admin.end();

const store = createPostgresStore({ connectionString: server.url, schema, maxConnections: 2 });
await store.ready;
const kinds = new Map();
for (let index = 0; index < RUNS; index++) {
  const kind = index % 2 === 0 ? 'reconciling' : 'plain';
  const effectful = kind === 'reconciling' ? 'payment_insert' : 'notify_once';
  const plan = makePlan(
    Array.from({ length: STEPS }, (_, step) => ({
      id: `s${step}`,
      tool: step % 2 === 0 ? 'ledger_write' : effectful,
      args: { sleepMs: random(20, 150) },
      ...(step > 0 ? { dependsOn: [`s${step - 1}`] } : {}),
    })),
    { id: `plan_${kind}` },
  );
  kinds.set((await enqueue(plan, { store })).runId, kind);
}

const script = fileURLToPath(new URL('./_chaos-worker.mjs', import.meta.url));
const env = { CHAOS_URL: server.url, CHAOS_SCHEMA: schema, CHAOS_SIDE: side, CHAOS_TTL_MS: String(TTL) };
function startWorker() {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const ready = new Promise((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
  return { child, ready, exited: new Promise((resolve) => child.once('exit', resolve)) };
}
let workers = Array.from({ length: WORKERS }, startWorker);
await Promise.all(workers.map((worker) => worker.ready));

const done = async () =>
  Number(
    (
      await store.db
        .selectFrom('work_queue')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('state', '=', 'done')
        .executeTakeFirst()
    )?.n ?? 0,
  );
const started = Date.now();
const events = { killed: 0, paused: 0, postgresRestarts: 0 };
let nextKill = started + random(3_000, 6_000);
let pausedAt = started + 4_000;
let restartAt = started + 12_000;
for (;;) {
  let finished = 0;
  try {
    finished = await done();
  } catch {
    // Postgres is restarting.
  }
  if (finished >= RUNS || Date.now() - started > LIMIT_MS) break;
  const now = Date.now();
  if (now >= nextKill) {
    const index = random(0, workers.length);
    const victim = workers[index];
    victim.child.kill('SIGCONT');
    victim.child.kill('SIGKILL');
    await victim.exited;
    events.killed++;
    workers = workers.map((worker, at) => (at === index ? startWorker() : worker));
    nextKill = now + random(3_000, 6_000);
  }
  if (pausedAt && now >= pausedAt) {
    const paused = workers[random(0, workers.length)];
    paused.child.kill('SIGSTOP');
    events.pausedPid = paused.child.pid;
    events.paused++;
    pausedAt = undefined;
    setTimeout(() => paused.child.kill('SIGCONT'), 3 * TTL);
  }
  if (restartAt && now >= restartAt) {
    server.stop();
    server.start();
    events.postgresRestarts++;
    restartAt = undefined;
  }
  await sleep(100);
}
const seconds = (Date.now() - started) / 1000;
for (const worker of workers) {
  worker.child.kill('SIGCONT');
  worker.child.kill('SIGKILL');
}
await Promise.all(workers.map((worker) => worker.exited));

// The report.
const side_ = (table) => `${side}.${table}`;
const { rows: queue } = await store.connection.pool.query(
  `select run_id, state, claim_expires_at < clock_timestamp() as expired from ${schema}.work_queue`,
);
const { rows: started_ } = await store.connection.pool.query(
  `select distinct execution_id from ${side_('invocations')}`,
);
const bodies = new Set(started_.map((row) => row.execution_id));
const { rows: notified } = await store.connection.pool.query(
  `select run_id, step_id from ${side_('notifications')} group by run_id, step_id having count(*) > 1`,
);
const { rows: doubledPayments } = await store.connection.pool.query(`select pid from ${side_('doubled')}`);
const tally = { reconciling: {}, plain: {} };
let lost = 0;
let stuck = 0;
let interrupted = 0;
let neverStarted = 0;
for (const row of queue) {
  const kind = kinds.get(row.run_id);
  const summary = await store.getRun(row.run_id);
  const status = summary?.status ?? 'none';
  tally[kind][status] = (tally[kind][status] ?? 0) + 1;
  if (row.state !== 'done') {
    if (row.state === 'claimed' && row.expired) stuck++;
    else lost++;
  } else if (status === 'running' || status === 'none') stuck++;
  for (const event of await readAll(store, row.run_id)) {
    if (event.type !== 'step-end' || event.result.error?.code !== ErrorCodes.STEP_INTERRUPTED) continue;
    interrupted++;
    if (!bodies.has(event.result.executionId)) neverStarted++;
  }
}
console.log(
  `chaos: ${RUNS} runs × ${STEPS} steps, ${WORKERS} workers, lease TTL ${TTL} ms, ${seconds.toFixed(1)} s; ` +
    `${events.killed} SIGKILLs, ${events.paused} worker paused for ${3 * TTL} ms, ${events.postgresRestarts} Postgres restart`,
);
console.log(`runs by kind and status: ${JSON.stringify(tally)}`);
console.log(
  `lost ${lost}   stuck ${stuck}   doubled ${notified.length}   re-asked ${doubledPayments.length}   E309 ${interrupted} (never started ${neverStarted})`,
);
const byPaused = doubledPayments.filter((row) => row.pid === events.pausedPid).length;
if (doubledPayments.length > 0) console.log(`re-asked by the paused worker: ${byPaused} of ${doubledPayments.length}`);
await store.close();
server.close();
