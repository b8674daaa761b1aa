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
//   CHAOS_DEBUG=1 also prints the step-end of every step counted as never started, and keeps the
//   directory of started tool bodies.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, readAll } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { createPostgresStore, enqueue } from '@stepwise/store-postgres';
import { startThrowawayPostgres } from '@stepwise/store-postgres/testing';
import pg from 'pg';
import { writeResults } from '../_protocol.mjs';

const RUNS = Number(process.argv[2] ?? 60);
const STEPS = Number(process.argv[3] ?? 10);
const WORKERS = 3;
const TTL = 1_500;
const LIMIT_MS = 600_000;
const RETRY = { maxAttempts: 6, initialDelayMs: 200, factor: 2 };
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
      // Tools whose retry is safe retry what a Postgres restart fails; the notification cannot.
      ...(step % 2 === 0 || kind === 'reconciling' ? { retry: RETRY } : {}),
      ...(step > 0 ? { dependsOn: [`s${step - 1}`] } : {}),
    })),
    { id: `plan_${kind}` },
  );
  kinds.set((await enqueue(plan, { store })).runId, kind);
}

const script = fileURLToPath(new URL('./_chaos-worker.mjs', import.meta.url));
// Each worker process appends the execution id of every tool body it enters to a file of its own here.
const startedDirectory = mkdtempSync(join(tmpdir(), 'stepwise-chaos-'));
const env = {
  CHAOS_URL: server.url,
  CHAOS_SCHEMA: schema,
  CHAOS_SIDE: side,
  CHAOS_TTL_MS: String(TTL),
  CHAOS_STARTED: startedDirectory,
};
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
    if (process.env.CHAOS_DEBUG) console.log(`SIGKILL pid ${victim.child.pid} at ${new Date().toISOString()}`);
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
const bodies = new Set(
  readdirSync(startedDirectory).flatMap((file) =>
    readFileSync(join(startedDirectory, file), 'utf8').split('\n').filter(Boolean),
  ),
);
if (!process.env.CHAOS_DEBUG) rmSync(startedDirectory, { recursive: true, force: true });
else console.log(`started tool bodies: ${startedDirectory}`);
const { rows: notified } = await store.connection.pool.query(
  `select run_id, step_id from ${side_('notifications')} group by run_id, step_id having count(*) > 1`,
);
const { rows: doubledPayments } = await store.connection.pool.query(`select pid from ${side_('doubled')}`);
const tally = { reconciling: {}, plain: {} };
let lost = 0;
let stuck = 0;
let interrupted = 0;
let neverStarted = 0;
const otherFailures = [];
for (const row of queue) {
  const kind = kinds.get(row.run_id);
  const summary = await store.getRun(row.run_id);
  const status = summary?.status ?? 'none';
  tally[kind][status] = (tally[kind][status] ?? 0) + 1;
  if (row.state !== 'done') {
    if (row.state === 'claimed' && row.expired) stuck++;
    else lost++;
  } else if (status === 'running' || status === 'none') stuck++;
  // Each step's last end: a failed attempt that was retried is not a failure of the run.
  const ends = new Map();
  for (const event of await readAll(store, row.run_id)) if (event.type === 'step-end') ends.set(event.stepId, event);
  for (const event of ends.values()) {
    if (event.result.status !== 'failed') continue;
    const error = event.result.error;
    if (error?.code !== ErrorCodes.STEP_INTERRUPTED) {
      // Any other failure is printed, but not the steps a failure skipped: the counts do not explain it.
      if (error?.code !== ErrorCodes.DEPENDENCY_FAILED) {
        otherFailures.push(`${kind} ${row.run_id} ${event.stepId}: ${error?.code} ${error?.message}`);
      }
      continue;
    }
    interrupted++;
    if (!bodies.has(event.result.executionId)) {
      neverStarted++;
      if (process.env.CHAOS_DEBUG) {
        console.log(
          `never started: ${kind} ${row.run_id} ${event.stepId} ${event.result.executionId}; the run's journal:`,
        );
        for (const each of await readAll(store, row.run_id)) {
          const { seq, type, at, stepId, executionId, attempt, status } = each;
          console.log(
            `  ${JSON.stringify({ seq, type, at, stepId, executionId, attempt, status, error: each.result?.error?.message ?? each.error?.message, owner: each.owner, reason: each.reason })}`,
          );
        }
      }
    }
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
for (const failure of otherFailures) console.log(`failed otherwise: ${failure}`);
const byPaused = doubledPayments.filter((row) => row.pid === events.pausedPid).length;
if (doubledPayments.length > 0) console.log(`re-asked by the paused worker: ${byPaused} of ${doubledPayments.length}`);
writeResults('chaos', {
  runs: RUNS,
  steps: STEPS,
  workers: WORKERS,
  ttlMs: TTL,
  seconds,
  killed: events.killed,
  pausedMs: events.paused > 0 ? 3 * TTL : 0,
  postgresRestarts: events.postgresRestarts,
  tally,
  lost,
  stuck,
  doubled: notified.length,
  reAsked: doubledPayments.length,
  reAskedByPaused: byPaused,
  interrupted,
  neverStarted,
  otherFailures,
});
await store.close();
server.close();
