// The store's own JavaScript per step, without SQLite: the batches of a no-op chain (one commit per
// step, durability 'step') and of the 'batched' fan-out (1 → N → 1, concurrency 16) appended to a
// store whose statements do nothing (better-sqlite3's Statement run/get replaced by stubs that return
// at once; the run row the store reads gives back the last seq it was sent), so what is timed is
// the store's encoding, packing, fold and projection code, and the garbage it leaves (collections
// during a run count). Also the bytes allocated per step (V8's sampling heap profiler, objects
// collected since included): what the collector has to clear. CPU figures on a machine shared with
// other work move by ±30% from round to round; the allocation figures barely move.
// For the chain, also its user CPU when the thread is paused PAUSE_US (default 200) after each
// commit, as an fsync pauses it at synchronous FULL: the same JavaScript then costs two to three
// times as much (caches and predictors cold after the pause), which is why the store's and the
// engine's CPU beyond the floor's is larger at FULL than at NORMAL with the same commits and syncs.
//
// Protocol (bench/README.md): gc() before each timed run, WARM_UP warm-up runs of each contender,
// contenders interleaved round by round, medians of ROUNDS (default 15); each run appends to a new
// run id, so the store's fold starts empty as in a new run. What it prints is written to
// bench/results/own-javascript.json (own-javascript-before-after.json with --before).
//
//   node bench/store-sqlite/own-javascript.mjs [steps=2000] [--before <rev>]
import { mkdtempSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutsFromArguments } from '../_packages.mjs';
import { machineLine, median, requireGc, writeResults } from '../_protocol.mjs';
import { noopChain, noopFanOut, noopTools } from '../_workloads.mjs';
import { betterSqlite } from './_floor.mjs';

requireGc();
const { checkouts, rest } = await checkoutsFromArguments();
const STEPS = Number(rest[0] ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 15);
const WARM_UP = Number(process.env.WARM_UP ?? 5);
const PAUSE_US = Number(process.env.PAUSE_US ?? 200);
const pauseCell = new Int32Array(new SharedArrayBuffer(4));
const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-own-javascript-'));

// One better-sqlite3 for every checkout (a worktree links this checkout's node_modules).
const Database = betterSqlite(checkouts[0].packages);
const Statement = new Database(':memory:').prepare('select 1').constructor;
const stub = { on: false, lastSeq: 0 };
const { run, get } = Statement.prototype;
const ran = { changes: 1, lastInsertRowid: 1 };
Statement.prototype.run = function (...values) {
  return stub.on ? ran : run.apply(this, values);
};
Statement.prototype.get = function (...values) {
  if (!stub.on) return get.apply(this, values);
  // The only row the append path reads: the run's, with the journal's last seq.
  return stub.lastSeq === 0
    ? undefined
    : {
        key: 1,
        last_seq: stub.lastSeq,
        lease_owner: null,
        lease_token: null,
        lease_ttl_ms: null,
        lease_expires_at: null,
      };
};

function planOf(packages, shape) {
  return shape === 'chain' ? noopChain(packages, STEPS) : noopFanOut(packages, STEPS);
}

/** The batches one run of the shape appends (recorded on MemoryStore, statements not stubbed). */
async function recordBatches(packages, shape) {
  const batches = [];
  const memory = new packages.core.MemoryStore();
  const store = new Proxy(memory, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      if (property !== 'append') return value.bind(target);
      return (runId, events, lease) => {
        batches.push([...events]);
        return value.call(target, runId, events, lease);
      };
    },
  });
  const durability = shape === 'chain' ? 'step' : 'batched';
  const engine = packages.dag.dagEngine({ tools: noopTools(packages), store, durability, concurrency: 16 });
  const result = await engine.run(planOf(packages, shape)).result;
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  return batches;
}

/** The batches as run `runId`'s (made before a clock starts). */
const asRun = (batches, runId) => batches.map((batch) => batch.map((event) => ({ ...event, runId })));

/**
 * Appends the batches (`asRun`) with the statements stubbed; CPU and user CPU milliseconds. With
 * `pauseMs`, the thread sleeps that long after each commit (not counted: it uses no CPU).
 */
async function appendStubbed(store, copies, pauseMs = 0) {
  const runId = copies[0][0].runId;
  globalThis.gc();
  stub.lastSeq = 0;
  stub.on = true;
  const start = process.cpuUsage();
  try {
    for (const batch of copies) {
      await store.append(runId, batch);
      stub.lastSeq = batch[batch.length - 1].seq;
      if (pauseMs > 0) Atomics.wait(pauseCell, 0, 0, pauseMs);
    }
  } finally {
    stub.on = false;
  }
  const used = process.cpuUsage(start);
  return { cpuMs: (used.user + used.system) / 1000, userMs: used.user / 1000 };
}

/** Bytes allocated per step by one stubbed run (sampled every 128 bytes). */
async function allocatedPerStep(store, batches, runId) {
  const copies = asRun(batches, runId);
  const session = new Session();
  session.connect();
  const sampling = { samplingInterval: 128, includeObjectsCollectedByMajorGC: true };
  await session.post('HeapProfiler.startSampling', { ...sampling, includeObjectsCollectedByMinorGC: true });
  await appendStubbed(store, copies);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  const total = (node) => (node.selfSize ?? 0) + (node.children ?? []).reduce((sum, child) => sum + total(child), 0);
  return total(profile.head) / STEPS;
}

console.log(`the store's own JavaScript per step, statements stubbed (${machineLine()}; median of ${ROUNDS})`);
const rows = [];
const pairs = [];
for (const shape of ['chain', 'fan-out']) {
  const contenders = [];
  for (const { label, packages } of checkouts) {
    const store = packages.sqlite.createSqliteStore({ path: join(directory, `${label}-${shape}.db`) });
    await store.ready;
    contenders.push({ label, store, batches: await recordBatches(packages, shape), cpu: [], pausedUser: [] });
  }
  let runs = 0;
  for (let round = 0; round < WARM_UP + ROUNDS; round++) {
    for (const contender of contenders) {
      const { cpuMs } = await appendStubbed(contender.store, asRun(contender.batches, `run_${runs++}`));
      if (round >= WARM_UP) contender.cpu.push((cpuMs * 1000) / STEPS);
      if (shape !== 'chain' || round < WARM_UP) continue;
      // Paused runs interleaved with the others; user CPU only (the pause's own futex call is system time).
      const paused = await appendStubbed(contender.store, asRun(contender.batches, `run_${runs++}`), PAUSE_US / 1000);
      contender.pausedUser.push((paused.userMs * 1000) / STEPS);
    }
  }
  for (const contender of contenders) {
    const allocated = await allocatedPerStep(contender.store, contender.batches, `run_${runs++}`);
    await contender.store.close();
    const row = {
      checkout: contender.label,
      shape,
      commits: contender.batches.length,
      cpu: median(contender.cpu),
      allocated,
      ...(contender.pausedUser.length > 0 ? { pauseUs: PAUSE_US, pausedUser: median(contender.pausedUser) } : {}),
    };
    rows.push(row);
    const paused =
      row.pausedUser === undefined
        ? ''
        : `; user CPU ${row.pausedUser.toFixed(1)} µs/step paused ${PAUSE_US} µs a commit`;
    console.log(
      `${row.checkout.padEnd(8)} ${shape.padEnd(7)} ${STEPS} steps in ${row.commits} commits: CPU ${row.cpu.toFixed(1)} µs/step, ${Math.round(allocated)} bytes allocated per step${paused}`,
    );
  }
  if (contenders.length === 2) {
    const [before, after] = contenders;
    const paired = median(after.cpu.map((cpu, index) => cpu / before.cpu[index]));
    console.log(`  ${after.label} / ${before.label}: CPU per round, median ${paired.toFixed(2)}`);
    pairs.push({ shape, after: after.label, before: before.label, ratio: paired.toFixed(2) });
  }
}
console.log(`at the end: ${machineLine()}`);
writeResults(checkouts.length === 2 ? 'own-javascript-before-after' : 'own-javascript', {
  steps: STEPS,
  rounds: ROUNDS,
  warmUp: WARM_UP,
  rows: rows.map((row) => ({
    ...row,
    cpu: row.cpu.toFixed(1),
    allocated: Math.round(row.allocated),
    ...(row.pausedUser === undefined ? {} : { pausedUser: row.pausedUser.toFixed(1) }),
  })),
  pairs,
});
