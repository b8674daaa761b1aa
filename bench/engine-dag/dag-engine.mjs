// @stepwise/engine-dag against LangGraph.js, measured in the same process and run:
//  (a) makespan / critical path on a 500-step random DAG with skewed sleep durations,
//      unbounded and with concurrency 8 (target ≤ 1.05 unbounded);
//  (b) engine overhead in µs per step on 10,000 no-op steps, MemoryStore and SQLite;
//  (c) the same DAGs as a LangGraph StateGraph (MemorySaver and SqliteSaver at NORMAL, as ours), printed as ratios.
//  (a) runs on the random DAG (uneven levels, close to LangGraph's worst case) and on a uniform-level DAG.
// Contenders in (a) run interleaved round by round. peers.mjs compares chains and fan-outs at equal durability.
// LangGraph's graph compile grows quadratically with the node count (≈4 s for 2,000 nodes here),
// so its overhead is measured on LANGGRAPH_STEPS no-op steps and compared with ours at that size.
// Protocol (bench/README.md): gc() before each timed run, warm-up runs first, contenders interleaved
// round by round (in (b), the engine and the kernel loop after a full-size run of each), the median of ROUNDS;
// what it prints is written to bench/results/dag-engine.json for the README.
//
//   node bench/engine-dag/dag-engine.mjs [overheadSteps=10000] [langgraphSteps=1000]
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, MemoryStore } from '@stepwise/core';
import { createTestTools } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { machineLine, median, requireGc, writeResults } from '../_protocol.mjs';
import { kernelLoop, timerFloor } from './_baselines.mjs';
import { buildGraph, invoke, savers } from './_langgraph.mjs';
import { criticalPath, depth, noopDag, skewedDag, uniformDag } from './_plans.mjs';

requireGc();

// LangGraph adds one abort listener per running node to a shared signal; that warning is noise here.
setMaxListeners(0);
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning.name !== 'MaxListenersExceededWarning') console.warn(warning);
});

const OVERHEAD_STEPS = Number(process.argv[2] ?? 10_000);
const LANGGRAPH_STEPS = Number(process.argv[3] ?? 1_000);
const MAKESPAN_STEPS = 500;
const UNIFORM_LEVELS = 10;
const TARGET_RATIO = 1.05;

const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-dag-'));
let files = 0;
const databasePath = () => join(directory, `bench-${files++}.db`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fixed = (value, digits = 1) => value.toFixed(digits);

const { registry: tools } = createTestTools();
tools.register(
  defineTool({
    name: 'noop',
    description: 'Does nothing; measures everything around it.',
    input: { type: 'object' },
    effect: 'read',
    execute: () => ({ ok: true }),
  }),
);

const ROUNDS = 3;

/** One run through the engine: wall time from `run()` and from the journaled `run-start` (after validation and lease). */
async function ourRun(plan, { store, concurrency } = {}) {
  let executionStarted;
  const engine = dagEngine({
    tools,
    store: store ?? new MemoryStore(),
    // "unbounded" rows pass nothing: Infinity, as LangGraph without maxConcurrency (the engine's default is 16).
    concurrency: concurrency ?? Number.POSITIVE_INFINITY,
    onEvent: (event) => {
      if (event.type === 'run-start') executionStarted = performance.now();
    },
  });
  globalThis.gc();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await engine.run(plan).result;
  const ended = performance.now();
  const used = process.cpuUsage(cpu);
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  return { total: ended - started, execution: ended - executionStarted, cpu: (used.user + used.system) / 1000 };
}

/** One LangGraph run: compile (not counted in its makespan) and invoke. */
async function theirRun(plan, work, saver, maxConcurrency) {
  const compileStarted = performance.now();
  const graph = buildGraph(plan, work, saver);
  const compileMs = performance.now() - compileStarted;
  globalThis.gc();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await invoke(graph, plan, maxConcurrency);
  const used = process.cpuUsage(cpu);
  return { compileMs, elapsed: performance.now() - started, cpu: (used.user + used.system) / 1000 };
}

// Warm both up (JIT, module init, SQLite migrations) so neither pays first-run costs below.
await ourRun(noopDag(300, 1));
await theirRun(noopDag(100, 1), async () => undefined, savers.MemorySaver());

console.log(
  `node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0].toFixed(1)}; ${ROUNDS} rounds per line (median)\n`,
);
/** Runs every contender once per round, interleaved, and returns each one's median run. */
async function interleaved(contenders) {
  const samples = new Map(Object.keys(contenders).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(contenders)) {
      globalThis.gc();
      samples.get(name).push(await run(round));
    }
  }
  const medians = {};
  for (const [name, values] of samples) {
    medians[name] = Object.fromEntries(
      Object.keys(values[0]).map((key) => [key, median(values.map((value) => value[key]))]),
    );
  }
  return medians;
}

const makespans = [];
/** Makespan of one sleep DAG: timer floor, kernel loop, ours and LangGraph's, interleaved. */
async function makespan(label, plan, durations) {
  console.log(`(a) makespan on ${label} with skewed sleeps`);
  const critical = criticalPath(plan, durations);
  const total = [...durations.values()].reduce((sum, ms) => sum + ms, 0);
  const lowerBound8 = Math.max(critical, total / 8);
  console.log(
    `    critical path ${critical} ms over ${depth(plan)} levels; total work ${total} ms; lower bound with 8 slots ${fixed(lowerBound8, 0)} ms`,
  );
  const work = (step) => sleep(durations.get(step.id));
  const sqliteStore = () => createSqliteStore({ path: databasePath() });
  const measured = await interleaved({
    floor: async () => ({ ms: await timerFloor(plan, durations) }),
    kernel: async (round) => ({
      ms: await kernelLoop(plan, tools, new MemoryStore(), `run_kernel_${plan.id}_${round}`),
    }),
    unbounded: async () => ourRun(plan),
    unboundedSqlite: async () => {
      const store = sqliteStore();
      const run = await ourRun(plan, { store });
      await store.close();
      return run;
    },
    bounded: async () => ourRun(plan, { concurrency: 8 }),
    langgraph: async () => theirRun(plan, work, savers.MemorySaver()),
    langgraphSqlite: async () => theirRun(plan, work, savers.SqliteSaver(databasePath())),
    langgraphBounded: async () => theirRun(plan, work, savers.MemorySaver(), 8),
  });
  const line = (run, name, bound = critical) => ({ run, ...measured[name], bound });
  const ratio = (ms, bound = critical) => fixed(ms / bound, 3);
  const rows = [
    line('timer floor: bare setTimeouts, eager (no kernel, no journal)', 'floor'),
    line('core kernel in a minimal eager loop, memory', 'kernel'),
    line('stepwise dag, unbounded, memory', 'unbounded'),
    line('stepwise dag, unbounded, sqlite NORMAL', 'unboundedSqlite'),
    line('stepwise dag, concurrency 8, memory', 'bounded', lowerBound8),
    line('langgraph, MemorySaver', 'langgraph'),
    line('langgraph, SqliteSaver NORMAL', 'langgraphSqlite'),
    line('langgraph, maxConcurrency 8, MemorySaver', 'langgraphBounded', lowerBound8),
  ].map((row) => {
    const ms = row.execution ?? row.elapsed ?? row.ms;
    return {
      run: row.run,
      'makespan ms': fixed(ms, 0),
      'ratio to bound': ratio(ms, row.bound),
      'incl. validation ms': row.total === undefined ? '' : fixed(row.total, 0),
      'CPU ms (whole run)': row.cpu === undefined ? '' : fixed(row.cpu, 0),
      bound: row.bound === critical ? 'critical path' : 'max(cp, work/8)',
    };
  });
  console.table(rows);
  const unboundedRatio = measured.unbounded.execution / critical;
  console.log(
    `    target makespan/critical path ≤ ${TARGET_RATIO} unbounded: ${fixed(unboundedRatio, 3)} ${unboundedRatio <= TARGET_RATIO ? 'MET' : 'MISSED'} (timer floor on this machine now: ${ratio(measured.floor.ms)}; including validation and lease: ${ratio(measured.unbounded.total)})`,
  );
  console.log(
    `    ours / LangGraph makespan: unbounded ${fixed(measured.unbounded.execution / measured.langgraph.elapsed, 3)} (memory), ${fixed(measured.unboundedSqlite.execution / measured.langgraphSqlite.elapsed, 3)} (SQLite, both NORMAL), concurrency 8 ${fixed(measured.bounded.execution / measured.langgraphBounded.elapsed, 3)}\n`,
  );
  makespans.push({
    label,
    critical,
    levels: depth(plan),
    total,
    lowerBound8: fixed(lowerBound8, 0),
    rows,
    unboundedRatio: fixed(unboundedRatio, 3),
    met: unboundedRatio <= TARGET_RATIO,
    versusLangGraph: {
      memory: fixed(measured.unbounded.execution / measured.langgraph.elapsed, 3),
      sqlite: fixed(measured.unboundedSqlite.execution / measured.langgraphSqlite.elapsed, 3),
      bounded: fixed(measured.bounded.execution / measured.langgraphBounded.elapsed, 3),
    },
  });
}

{
  const { plan, durations } = skewedDag(MAKESPAN_STEPS);
  await makespan(`a ${MAKESPAN_STEPS}-step random DAG (uneven levels)`, plan, durations);
}
{
  const { plan, durations } = uniformDag(UNIFORM_LEVELS, MAKESPAN_STEPS / UNIFORM_LEVELS);
  await makespan(
    `a ${MAKESPAN_STEPS}-step uniform DAG (${UNIFORM_LEVELS} levels of ${MAKESPAN_STEPS / UNIFORM_LEVELS})`,
    plan,
    durations,
  );
}

console.log(`\n(b) engine overhead on ${OVERHEAD_STEPS.toLocaleString('en')} no-op steps (random DAG, unbounded)`);
const overheadRows = [];
for (const kind of ['memory', 'sqlite']) {
  const big = noopDag(OVERHEAD_STEPS);
  const storeOf = () => (kind === 'sqlite' ? createSqliteStore({ path: databasePath() }) : new MemoryStore());
  // The kernel loop and the engine interleaved round by round, after one full-size run of each.
  const contenders = {
    kernel: async (round) => {
      const store = storeOf();
      const ms = await kernelLoop(big, tools, store, `run_kernel_overhead_${kind}_${round}`);
      await store.close();
      return { ms };
    },
    ours: async () => {
      const store = storeOf();
      const run = await ourRun(big, { store });
      await store.close();
      return run;
    },
  };
  for (const run of Object.values(contenders)) await run('warm-up');
  const { kernel, ours } = await interleaved(contenders);
  const kernelMs = kernel.ms;
  overheadRows.push({
    store: kind,
    'engine µs/step': fixed((ours.execution * 1000) / OVERHEAD_STEPS),
    'incl. validation µs/step': fixed((ours.total * 1000) / OVERHEAD_STEPS),
    'core kernel loop µs/step': fixed((kernelMs * 1000) / OVERHEAD_STEPS),
    'engine / kernel': fixed(ours.execution / kernelMs, 2),
  });
}
console.table(overheadRows);

console.log(
  `\n(c) LangGraph on the same no-op DAG shape at ${LANGGRAPH_STEPS.toLocaleString('en')} steps (compile not counted)`,
);
const small = noopDag(LANGGRAPH_STEPS);
const noWork = async () => undefined;
const comparison = [];
for (const kind of ['memory', 'sqlite']) {
  const measured = await interleaved({
    ours: async () => {
      const store = kind === 'sqlite' ? createSqliteStore({ path: databasePath() }) : new MemoryStore();
      const run = await ourRun(small, { store });
      await store.close();
      return run;
    },
    theirs: async () =>
      theirRun(small, noWork, kind === 'sqlite' ? savers.SqliteSaver(databasePath()) : savers.MemorySaver()),
  });
  const { ours, theirs } = measured;
  comparison.push({
    store: kind === 'sqlite' ? 'sqlite NORMAL / SqliteSaver NORMAL' : 'memory / MemorySaver',
    'stepwise µs/step': fixed((ours.execution * 1000) / LANGGRAPH_STEPS),
    'langgraph µs/step': fixed((theirs.elapsed * 1000) / LANGGRAPH_STEPS),
    'langgraph compile ms': fixed(theirs.compileMs, 0),
    'ours / theirs': fixed(ours.execution / theirs.elapsed, 3),
  });
}
console.table(comparison);
console.log(`${machineLine()} at the end`);

rmSync(directory, { recursive: true, force: true });
writeResults('dag-engine', {
  rounds: ROUNDS,
  targetRatio: TARGET_RATIO,
  overheadSteps: OVERHEAD_STEPS,
  langgraphSteps: LANGGRAPH_STEPS,
  makespans,
  overhead: overheadRows,
  comparison,
});
