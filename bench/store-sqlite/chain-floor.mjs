// The durable step against its floor: a chain of no-op `read` steps through @stepwise/engine-dag
// with `durability: 'step'` on @stepwise/store-sqlite, at synchronous NORMAL and FULL, next to
//   - the store alone: the same batches appended straight to a new store (no engine), and
//   - the floor: the same rows written straight through better-sqlite3, commit for commit, into the
//     same schema under the same pragmas (see _floor.mjs; built from the engine run's own file).
// Also the `'batched'` fan-out (1 → N → 1, concurrency 16) at NORMAL, pages written per commit
// (WAL frames of one run with checkpoints off, divided by its commits) and CPU time per step
// (user + system): the store's CPU beyond the floor's is its own JavaScript.
//
// Protocol (bench/README.md): gc() before every timed run, WARM_UP warm-up runs of each contender
// (default 6: the engine's CPU per step kept falling over its first five or six 2,000-step runs, from
// about 300 to 40 µs on MemoryStore, while the optimizing compiler caught up; one warm-up run left
// most of that in the timed rounds; every contender gets the same), contenders interleaved round by round, medians of ROUNDS (default 3; FULL at 10,000 steps: one
// round without warm-up, FULL_ROUNDS to change it). Each timed run includes
// closing its database (which checkpoints what the run left in the WAL); opening a new database
// (for the store: its migrations, about 30 ms) happens before the clock, for every contender
// alike. Targets: engine ≤ 1.3× the floor at 2k and 10k steps, NORMAL and FULL; batched fan-out
// ≤ 50 µs/step.
//
//   node bench/store-sqlite/chain-floor.mjs [sizes=2000,10000] [--before <rev>]
//
// `--before <rev>` runs the same contenders for that commit too (a worktree, see _worktree.mjs),
// interleaved with this checkout's, and prints the ratios.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutsFromArguments } from '../_packages.mjs';
import { interleave, machineLine, median, requireGc, writeResults } from '../_protocol.mjs';
import { noopChain, noopFanOut, noopTools } from '../_workloads.mjs';
import { betterSqlite, floorWorkload, openFloor, writeFloor, writeFloorRows } from './_floor.mjs';

requireGc();
const { checkouts, rest } = await checkoutsFromArguments();
const SIZES = (rest[0] ?? '2000,10000').split(',').map(Number);
const LEVELS = ['NORMAL', 'FULL'];
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WARM_UP = Number(process.env.WARM_UP ?? 6);
const FAN_OUT_STEPS = 2000;
const CONCURRENCY = 16;
const TARGET_RATIO = 1.3;
const TARGET_FAN_OUT = 50;

const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-chain-floor-'));
let files = 0;
const newPath = () => join(directory, `${files++}.db`);

/** A store that records what each append carried and counts its write transactions. */
function recording(store, log) {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      if (property === 'append') {
        return (runId, events, lease) => {
          log.batches.push([...events]);
          return value.call(target, runId, events, lease);
        };
      }
      if (property === 'acquireLease' || property === 'renewLease' || property === 'releaseLease') {
        return (...args) => {
          log.leaseCommits++;
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
}

const walFrames = (path, pageSize) => {
  try {
    return Math.max(0, (statSync(`${path}-wal`).size - 32) / (pageSize + 24));
  } catch {
    return 0;
  }
};

/** One untimed run with checkpoints off: its batches, file, and the pages its commits wrote. */
async function recordChain(packages, plan, synchronous) {
  const path = newPath();
  const store = packages.sqlite.createSqliteStore({ path, synchronous, checkpointPages: 1e9 });
  await store.ready;
  const log = { batches: [], leaseCommits: 0 };
  const engine = packages.dag.dagEngine({
    tools: noopTools(packages),
    store: recording(store, log),
    durability: 'step',
  });
  const result = await engine.run(plan).result;
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  const frames = walFrames(path, 4096);
  await store.close();
  return { path, ...log, pagesPerCommit: frames / (log.batches.length + log.leaseCommits) };
}

function floorPagesPerCommit(Database, workload, synchronous) {
  const path = newPath();
  const database = writeFloor(Database, path, workload, { synchronous, checkpointPages: 0 });
  const frames = walFrames(path, database.pragma('page_size', { simple: true }));
  database.close();
  return frames / workload.commits.length;
}

/** A store on a new file with its migrations done: a contender's untimed setup. */
async function openStore(packages, synchronous) {
  const store = packages.sqlite.createSqliteStore({ path: newPath(), synchronous });
  await store.ready;
  return store;
}

/**
 * Each contender opens its new database (and the store its schema, through its migrations) before
 * the clock: that is done once per database, not per step, and the floor's schema costs it nearly
 * nothing. Writing the rows and closing the database are timed.
 */
function contendersOf(packages, plan, recorded, workload, synchronous) {
  const Database = betterSqlite(packages);
  const tools = noopTools(packages);
  const setup = () => openStore(packages, synchronous);
  return {
    engine: {
      setup,
      run: async (store) => {
        const engine = packages.dag.dagEngine({ tools, store, durability: 'step' });
        const result = await engine.run(plan).result;
        await store.close();
        if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
      },
    },
    store: {
      setup,
      run: async (store) => {
        for (const batch of recorded.batches) await store.append(workload.runId, batch);
        await store.close();
      },
    },
    floor: {
      setup: () => openFloor(Database, newPath(), workload, { synchronous }),
      run: (database) => writeFloorRows(database, workload).close(),
    },
  };
}

const results = [];
console.log(
  `durable chain against the floor of its own rows (${machineLine()}; median of ${ROUNDS} interleaved rounds)`,
);
for (const steps of SIZES) {
  for (const synchronous of LEVELS) {
    const cases = {};
    const meta = {};
    for (const { label, packages } of checkouts) {
      const plan = noopChain(packages, steps);
      const recorded = await recordChain(packages, plan, synchronous);
      const workload = floorWorkload(betterSqlite(packages), recorded.path, recorded.batches);
      meta[label] = {
        commits: recorded.batches.length,
        pagesPerCommit: recorded.pagesPerCommit,
        floorPagesPerCommit: floorPagesPerCommit(betterSqlite(packages), workload, synchronous),
      };
      for (const [name, run] of Object.entries(contendersOf(packages, plan, recorded, workload, synchronous))) {
        cases[`${label}|${name}`] = run;
      }
    }
    // FULL at 10,000 steps syncs 10,000 commits per run (a minute on a slow disk): one round, and no
    // warm-up (the NORMAL runs before it warmed the code), unless FULL_ROUNDS says otherwise.
    const long = synchronous === 'FULL' && steps >= 10_000;
    const rounds = long ? Number(process.env.FULL_ROUNDS ?? 1) : ROUNDS;
    const samples = await interleave(cases, { rounds, warmUp: long ? 0 : WARM_UP });
    for (const { label } of checkouts) {
      const at = (name, key = 'ms') => (median(samples[`${label}|${name}`][key]) * 1000) / steps;
      const row = {
        checkout: label,
        steps,
        synchronous,
        rounds,
        engine: at('engine'),
        store: at('store'),
        floor: at('floor'),
        engineCpu: at('engine', 'cpuMs'),
        storeCpu: at('store', 'cpuMs'),
        floorCpu: at('floor', 'cpuMs'),
        ...meta[label],
      };
      results.push(row);
      console.log(
        `${label.padEnd(8)} ${String(steps).padStart(6)} ${synchronous.padEnd(6)} engine ${row.engine.toFixed(1)} µs/step = ${(row.engine / row.floor).toFixed(2)}× floor ${row.floor.toFixed(1)} (target ≤ ${TARGET_RATIO}×: ${row.engine / row.floor <= TARGET_RATIO ? 'met' : 'NOT met'}); store alone ${row.store.toFixed(1)} = ${(row.store / row.floor).toFixed(2)}×; CPU µs/step engine ${row.engineCpu.toFixed(1)}, store ${row.storeCpu.toFixed(1)}, floor ${row.floorCpu.toFixed(1)} (store JS ≈ ${(row.storeCpu - row.floorCpu).toFixed(1)}); pages/commit ${row.pagesPerCommit.toFixed(2)} (floor ${row.floorPagesPerCommit.toFixed(2)}) over ${row.commits} commits`,
      );
    }
  }
}

const fanOut = {};
for (const { label, packages } of checkouts) {
  const plan = noopFanOut(packages, FAN_OUT_STEPS);
  const tools = noopTools(packages);
  fanOut[label] = {
    setup: () => openStore(packages, 'NORMAL'),
    run: async (store) => {
      const engine = packages.dag.dagEngine({ tools, store, concurrency: CONCURRENCY, durability: 'batched' });
      const result = await engine.run(plan).result;
      await store.close();
      if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
    },
  };
}
const fanOutSamples = await interleave(fanOut, { rounds: ROUNDS, warmUp: WARM_UP });
const fanOutRows = checkouts.map(({ label }) => {
  const perStep = (median(fanOutSamples[label].ms) * 1000) / FAN_OUT_STEPS;
  const cpu = (median(fanOutSamples[label].cpuMs) * 1000) / FAN_OUT_STEPS;
  console.log(
    `${label.padEnd(8)} batched fan-out, ${FAN_OUT_STEPS} steps, NORMAL: ${perStep.toFixed(1)} µs/step (CPU ${cpu.toFixed(1)}; target ≤ ${TARGET_FAN_OUT}: ${perStep <= TARGET_FAN_OUT ? 'met' : 'NOT met'})`,
  );
  return { checkout: label, steps: FAN_OUT_STEPS, perStep, cpu };
});
if (checkouts.length === 2) {
  const [before, after] = checkouts.map(({ label }) => label);
  console.log(`\nHEAD / ${before}:`);
  for (const row of results.filter((entry) => entry.checkout === after)) {
    const old = results.find(
      (entry) => entry.checkout === before && entry.steps === row.steps && entry.synchronous === row.synchronous,
    );
    console.log(
      `  ${row.steps} ${row.synchronous}: engine ${(row.engine / old.engine).toFixed(2)}, store alone ${(row.store / old.store).toFixed(2)}, store CPU beyond floor ${(row.storeCpu - row.floorCpu).toFixed(1)} vs ${(old.storeCpu - old.floorCpu).toFixed(1)} µs, pages/commit ${row.pagesPerCommit.toFixed(2)} vs ${old.pagesPerCommit.toFixed(2)}`,
    );
  }
  console.log(`  batched fan-out: ${(fanOutRows[1].perStep / fanOutRows[0].perStep).toFixed(2)}`);
}
console.log(`at the end: ${machineLine()}`);
writeResults(checkouts.length === 2 ? 'chain-floor-before-after' : 'chain-floor', {
  chain: results,
  fanOut: fanOutRows,
});
rmSync(directory, { recursive: true, force: true });
