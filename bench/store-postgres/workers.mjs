// Workers sharing runs through one Postgres: steps/s and Postgres commits per step of
// @stepwise/store-postgres workers (1, 2, 4 and 8 processes) next to DBOS Transact workers on the same
// workload, the same Postgres server and the same durability (fsync on, synchronous commit), measured
// in the same run, interleaved. Then the takeover latency after a SIGKILL, against the lease TTL.
//
// CPU per step: the worker processes' CPU time (from the round's start, their start-up left out)
// plus the Postgres server's (every backend and the WAL writer), per step, from /proc.
//
// Commits per step: the round's database's `pg_stat_database.xact_commit` (every transaction,
// read-only ones included: the workers' polls count) after the workers and the bench's own
// connections closed, minus the bench's own completion polls, divided by the steps. One enqueue per
// run is included for both.
//
// Workload: chains of no-op steps (the engine, journal and queue are all there is to measure), each
// run enqueued from this process and driven by a worker process (8 runs at once per worker).
// Where a peer is favoured: DBOS journals one row per step (its output); Stepwise journals four
// events per step plus the audit projections (steps, executions), so it writes more per step.
// Stepwise's group commit shares one transaction among the appends of a worker's runs in flight
// (8 here): with fewer runs at once per worker it commits more per step. Both peers get fresh
// processes every round, warmed up the same way before it (below), the same concurrency and a pool
// of concurrency + 2; DBOS keeps its defaults otherwise (queue polling included). The no-op tool is
// declared idempotent; with step durability (the default) the engine still starts a step only once
// the step before it ended durably, as DBOS does.
//
// Warm-up (bench/README.md, Protocol): a production worker is a long-lived process, so every worker
// process of a round, Stepwise's and DBOS's alike, first drives max(8, ceil(500 / steps)) runs of the
// round's shape (50 runs of 10 steps, 10 runs of 50 steps) on a queue of its own in a separate
// database of the round, with the round's worker options, then opens the round's database and
// reports ready. The round's clock and CPU start once every worker reported ready; its commits are
// counted in the round's database, which the warm-up never touches (the workers' connecting to it is
// counted, for both, as before). Both peers' databases are migrated by the bench before their workers
// start, so all of a round's workers start and warm up together. BENCH_WARM_UP=<steps> changes the
// 500; 0 leaves the warm-up out (cold processes, as this bench measured before).
//
//   node bench/store-postgres/workers.mjs [runs] [steps]     (default 200 × 10; build the packages first)
//   BENCH_WARM_UP=<steps> (default 500) for each worker process's warm-up, 0 for none;
//   BENCH_WORKERS=1,4 to measure other worker counts; BENCH_SKIP_TAKEOVER=1 to leave the takeover out;
//   BENCH_STEPWISE_ONLY=1 to leave DBOS out; BENCH_PROFILE=1 to have each Stepwise worker print the
//   statements it sent (count, mean time) and its CPU time, BENCH_PROFILE=<directory> to also write
//   a CPU profile of each there; BENCH_SAMPLE=1 to print what the round's backends wait for (sampled
//   from pg_stat_activity); BENCH_NOTIFY=0 to have Stepwise workers poll instead of listening;
//   BENCH_POOL=<n> to give each Stepwise worker a pool of n connections (default: as DBOS's).

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chainPlan } from '@stepwise/core/testing';
import { createPostgresStore, enqueue } from '@stepwise/store-postgres';
import { startThrowawayPostgres } from '@stepwise/store-postgres/testing';
import pg from 'pg';
import { writeResults } from '../_protocol.mjs';

const RUNS = Number(process.argv[2] ?? 200);
const STEPS = Number(process.argv[3] ?? 10);
const SHAPES = [
  { runs: RUNS, steps: STEPS },
  { runs: Math.max(1, Math.round(RUNS / 5)), steps: STEPS * 5 },
];
const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? '1,2,4,8').split(',').map(Number);
const CONCURRENCY = 8;
const WARM_UP_STEPS = Number(process.env.BENCH_WARM_UP ?? 500);
/** Each worker process's warm-up, in the round's shape (see the header). */
const warmUpEnv = (url, steps) => ({
  BENCH_WARM_URL: url,
  BENCH_WARM_RUNS: String(WARM_UP_STEPS > 0 ? Math.max(CONCURRENCY, Math.ceil(WARM_UP_STEPS / steps)) : 0),
  BENCH_WARM_PLAN_STEPS: String(steps),
});
const here = (name) => fileURLToPath(new URL(name, import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let dbos;
if (!process.env.BENCH_STEPWISE_ONLY)
  try {
    dbos = await import('@dbos-inc/dbos-sdk');
  } catch (error) {
    console.log(`DBOS Transact not installed (${error.message}): Stepwise only`);
  }

const server = await startThrowawayPostgres({ durable: true });
process.on('exit', (code) => {
  if (code !== 0) console.error(readFileSync(join(server.directory, 'server.log'), 'utf8').slice(-3000));
});
const admin = new pg.Client(server.url);
await admin.connect();
let round = 0;

function spawnWorker(script, env) {
  const child = spawn(process.execPath, [here(script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"ready"')) resolve(JSON.parse(line));
    });
  });
  return { child, ready, exited: new Promise((resolve) => child.once('exit', resolve)) };
}

// CPU time (ms) from /proc: the clock starts after the workers are ready, so what they spent starting
// (module loading, migrations) is left out; what Postgres spent is its server processes' time,
// exited backends included (the postmaster reaps them: its children's time).
const TICK_MS = 10;
const statFields = (pid) => {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
};
/** CPU of this process's exited children (the worker processes of finished rounds). */
const childrenCpuMs = () => {
  const fields = statFields('self');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
};
function postgresCpuMs() {
  const postmaster = readFileSync(join(server.directory, 'data', 'postmaster.pid'), 'utf8').split('\n')[0];
  const own = statFields(postmaster);
  let total = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) * TICK_MS;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statFields(entry);
      if (fields[1] === postmaster) total += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    } catch {
      // Exited meanwhile: its time is in the postmaster's children's time.
    }
  }
  return total;
}

/**
 * BENCH_SAMPLE=1: what the round's backends are doing, sampled every 20 ms from pg_stat_activity
 * (state and wait event: lock waits, WAL flushes, client reads), printed on stderr per round.
 */
function sampleActivity(database) {
  if (!process.env.BENCH_SAMPLE) return async () => undefined;
  const counts = new Map();
  let samples = 0;
  let stopped = false;
  const sampler = new pg.Client(server.url);
  const done = (async () => {
    await sampler.connect();
    while (!stopped) {
      const { rows } = await sampler.query(
        `select state, coalesce(wait_event_type || ':' || wait_event, 'cpu') as wait, left(query, 28) as query
         from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`,
        [database],
      );
      samples++;
      for (const row of rows) {
        const key = row.state === 'active' ? `active ${row.wait} ${row.query}` : `${row.state} ${row.wait}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await sleep(20);
    }
    await sampler.end();
  })();
  return async (label) => {
    stopped = true;
    await done;
    const lines = [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([key, count]) => `${(count / samples).toFixed(2).padStart(7)}  ${key}`);
    process.stderr.write(`[activity ${label}] backends per sample (${samples} samples)\n${lines.join('\n')}\n`);
  };
}

async function stopAll(workers) {
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.race([Promise.all(workers.map((worker) => worker.exited)), sleep(10_000)]);
  for (const worker of workers) worker.child.kill('SIGKILL');
}

/** Polls until `countDone()` reaches `total`; returns how many polls it made (each one a commit). */
async function waitFor(countDone, total) {
  for (let polls = 1; ; polls++) {
    if ((await countDone()) >= total) return polls;
    await sleep(50);
  }
}

/** A fresh database per round, so its commit counter holds that round's transactions only. */
async function freshDatabase(prefix) {
  const database = `${prefix}_${round++}`;
  await admin.query(`create database ${database}`);
  return { database, url: server.url.replace(/\/postgres$/, `/${database}`) };
}

/** Transactions committed in `database` (every backend that used it has exited: its counts are flushed). */
async function commitsOf(database) {
  await sleep(100);
  await admin.query('select pg_stat_clear_snapshot()');
  const { rows } = await admin.query('select xact_commit::int as commits from pg_stat_database where datname = $1', [
    database,
  ]);
  return rows[0].commits;
}

async function stepwiseRound({ runs, steps }, workerCount) {
  const { database, url } = await freshDatabase('stepwise');
  const schema = 'bench';
  const warm = await freshDatabase('stepwise_warm');
  const warmStore = createPostgresStore({ connectionString: warm.url, schema, maxConnections: 1 });
  await warmStore.ready;
  await warmStore.close();
  const store = createPostgresStore({ connectionString: url, schema, maxConnections: 2 });
  await store.ready;
  const env = { BENCH_URL: url, BENCH_SCHEMA: schema, ...warmUpEnv(warm.url, steps) };
  const workers = Array.from({ length: workerCount }, () => spawnWorker('_stepwise-worker.mjs', env));
  const startCpu = (await Promise.all(workers.map((worker) => worker.ready))).reduce(
    (sum, ready) => sum + ready.cpuMs,
    0,
  );
  const cpuAtStart = { workers: childrenCpuMs(), postgres: postgresCpuMs() };
  const stopSampling = sampleActivity(database);
  const plan = chainPlan(steps, 'noop');
  const started = performance.now();
  for (let index = 0; index < runs; index++) await enqueue(plan, { store });
  const polls = await waitFor(async () => {
    const row = await store.db
      .selectFrom('work_queue')
      .select((eb) => eb.fn.countAll().as('done'))
      .where('state', '=', 'done')
      .executeTakeFirst();
    return Number(row?.done ?? 0);
  }, runs);
  const seconds = (performance.now() - started) / 1000;
  await stopSampling(`stepwise ${workerCount} workers, ${runs} × ${steps}`);
  const completed = await store.listRuns({ status: 'completed', limit: runs + 1 });
  if (completed.length !== runs) throw new Error(`stepwise: ${completed.length} of ${runs} runs completed`);
  await stopAll(workers);
  await store.close();
  // The check of completed runs above is one more transaction of the bench's own.
  const commits = (await commitsOf(database)) - polls - 1;
  return { seconds, commits, ...cpuSince(cpuAtStart, startCpu) };
}

/** Worker and Postgres CPU (ms) since `start`, the workers' start-up (`startCpu`) left out. */
function cpuSince(start, startCpu) {
  return { workerCpuMs: childrenCpuMs() - start.workers - startCpu, postgresCpuMs: postgresCpuMs() - start.postgres };
}

/** Runs `body` with this process's stdout held back (DBOS's migrations announce themselves there). */
async function quietly(body) {
  const write = process.stdout.write;
  process.stdout.write = () => true;
  try {
    return await body();
  } finally {
    process.stdout.write = write;
  }
}

async function dbosRound({ runs, steps }, workerCount) {
  const { database, url } = await freshDatabase('dbos');
  const warm = await freshDatabase('dbos_warm');
  // Migrated here: DBOS processes launched together on a fresh database deadlock in their schema
  // migrations (40P01), so they launch with runMigrations: false and start (and warm up) together.
  await quietly(() => dbos.DBOS.migrate(url));
  await quietly(() => dbos.DBOS.migrate(warm.url));
  const env = { BENCH_URL: url, ...warmUpEnv(warm.url, steps) };
  const workers = Array.from({ length: workerCount }, () => spawnWorker('_dbos-worker.mjs', env));
  const startCpu = (await Promise.all(workers.map((worker) => worker.ready))).reduce(
    (sum, ready) => sum + ready.cpuMs,
    0,
  );
  const cpuAtStart = { workers: childrenCpuMs(), postgres: postgresCpuMs() };
  const client = await dbos.DBOSClient.create({ systemDatabaseUrl: url, applicationName: 'stepwise-bench' });
  const counter = new pg.Client(url);
  await counter.connect();
  const started = performance.now();
  for (let index = 0; index < runs; index++) {
    await client.enqueue({ workflowName: 'chain', queueName: 'bench', appVersion: 'bench' }, steps);
  }
  const polls = await waitFor(async () => {
    const { rows } = await counter.query(
      `select count(*)::int as done from dbos.workflow_status where status = 'SUCCESS'`,
    );
    return rows[0].done;
  }, runs);
  const seconds = (performance.now() - started) / 1000;
  await counter.end();
  await client.destroy();
  await stopAll(workers);
  const commits = (await commitsOf(database)) - polls;
  return { seconds, commits, ...cpuSince(cpuAtStart, startCpu) };
}

const format = (value, width = 8, digits = 1) => value.toFixed(digits).padStart(width);
// Worker processes' CPU + Postgres's CPU per step, in ms (10 ms clock ticks summed over the round).
const cpuPerStep = (round, steps) =>
  `${(round.workerCpuMs / steps).toFixed(2)}+${(round.postgresCpuMs / steps).toFixed(2)}`.padStart(11);
// The machine may be shared: the figures mean little without its load.
const load = () =>
  `load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(', ')}`;
const startLoad = loadavg();
console.log(`start: ${load()}`);
console.log(
  `Postgres ${server.url.replace(/^.*@/, '')}, fsync on; ${WORKER_COUNTS.join('/')} worker processes × ${CONCURRENCY} runs at once`,
);
console.log(
  WARM_UP_STEPS > 0
    ? `warm-up: each worker process (both peers) first drives max(${CONCURRENCY}, ceil(${WARM_UP_STEPS} / steps)) runs of the round's shape in a separate database`
    : 'warm-up: none (cold worker processes)',
);
// A small round each first (the bench process, the server's first databases), not counted.
await stepwiseRound({ runs: 10, steps: 5 }, 1);
if (dbos) await dbosRound({ runs: 10, steps: 5 }, 1);
// What the README's block is rendered from (scripts/bench-figures.mjs, block `workers`).
const rounds = [];
const takeovers = [];
for (const shape of SHAPES) {
  const steps = shape.runs * shape.steps;
  console.log(`\n${shape.runs} runs × ${shape.steps} steps`);
  console.log(
    'workers   stepwise steps/s  commits/step  cpu ms/step    dbos steps/s  commits/step  cpu ms/step    stepwise/dbos steps/s',
  );
  for (const workerCount of WORKER_COUNTS) {
    const ours = await stepwiseRound(shape, workerCount);
    const theirs = dbos ? await dbosRound(shape, workerCount) : undefined;
    const line = [
      String(workerCount).padStart(7),
      format(steps / ours.seconds, 16),
      format(ours.commits / steps, 13, 2),
      cpuPerStep(ours, steps),
      theirs ? format(steps / theirs.seconds, 15) : '              –',
      theirs ? format(theirs.commits / steps, 13, 2) : '            –',
      theirs ? cpuPerStep(theirs, steps) : '           –',
      theirs ? `${(theirs.seconds / ours.seconds).toFixed(2).padStart(20)}×` : '',
    ];
    console.log(line.join('   '));
    const figures = (result) => ({
      stepsPerSecond: steps / result.seconds,
      commitsPerStep: result.commits / steps,
      workerCpuMsPerStep: result.workerCpuMs / steps,
      postgresCpuMsPerStep: result.postgresCpuMs / steps,
    });
    rounds.push({ ...shape, workers: workerCount, stepwise: figures(ours), dbos: theirs ? figures(theirs) : null });
  }
}

// Takeover: one run holds its second step; the worker holding it is SIGKILLed while another polls.
async function takeover(ttlMs) {
  const schema = `bench_${round++}`;
  const store = createPostgresStore({ connectionString: server.url, schema });
  await store.ready;
  const env = { BENCH_URL: server.url, BENCH_SCHEMA: schema, BENCH_TTL_MS: String(ttlMs) };
  const first = spawnWorker('_stepwise-worker.mjs', env);
  await first.ready;
  const plan = chainPlan(3, 'noop');
  const held = {
    ...plan,
    steps: plan.steps.map((step, index) => (index === 1 ? { ...step, args: { ...step.args, holdMs: 600_000 } } : step)),
  };
  const { runId } = await enqueue(held, { store });
  await waitFor(async () => (((await store.getRun(runId))?.stepCounts.running ?? 0) > 0 ? 1 : 0), 1);
  const second = spawnWorker('_stepwise-worker.mjs', env);
  await second.ready;
  first.child.kill('SIGKILL');
  const killed = Date.now();
  await waitFor(async () => ((await store.getRun(runId))?.status === 'completed' ? 1 : 0), 1);
  const { readAll } = await import('@stepwise/core');
  const resumed = (await readAll(store, runId)).find((event) => event.type === 'run-resume');
  await stopAll([second]);
  await store.close();
  return Date.parse(resumed.at) - killed;
}

if (!process.env.BENCH_SKIP_TAKEOVER) {
  console.log('\ntakeover after SIGKILL (no control service, no manual call)');
  console.log('lease TTL ms   takeover ms   takeover / TTL   (target < 2×)');
  for (const ttlMs of [1_000, 3_000]) {
    const samples = [];
    for (let index = 0; index < 3; index++) samples.push(await takeover(ttlMs));
    const worst = Math.max(...samples);
    takeovers.push({ ttlMs, samples, worst });
    console.log(
      `${String(ttlMs).padStart(12)}   ${String(worst).padStart(11)}   ${(worst / ttlMs).toFixed(2).padStart(14)}×   (worst of ${samples.join(', ')})`,
    );
  }
  console.log(
    'DBOS Transact self-hosted: a dead process’s workflows stay PENDING until a control service or a manual recovery call (not measured)',
  );
}
console.log(`end: ${load()}`);
writeResults('workers', {
  concurrency: CONCURRENCY,
  workerCounts: WORKER_COUNTS,
  warmUpSteps: WARM_UP_STEPS,
  startLoad,
  rounds,
  takeovers,
});
await admin.end();
server.close();
