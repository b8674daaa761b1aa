// @stepwise/engine-dag against LangGraph.js and Mastra workflows at equal durability, on no-op
// chains and fan-outs (1 → N → 1) of 100, 1,000 and 10,000 steps. Every contender is warmed up,
// the contenders run interleaved round by round, and each line is the median of ROUNDS rounds.
//
// Durability pairs (the ratio is always ours / theirs):
//   memory : Stepwise MemoryStore            vs LangGraph MemorySaver, and vs Mastra (in memory)
//   NORMAL : Stepwise SQLite synchronous=NORMAL vs SqliteSaver at NORMAL, durability "sync"
//   FULL   : Stepwise SQLite synchronous=FULL   vs SqliteSaver at FULL,   durability "sync"
//   async  : Stepwise SQLite NORMAL with durability "batched" (its closest mode: an idempotent
//            step's end commits with later work, at most 256 events later) vs SqliteSaver NORMAL
//            with LangGraph's default durability "async", which writes checkpoints in the
//            background and may lose the last ones on a crash.
// Both SQLite contenders checkpoint the WAL every 10,000 pages (the Stepwise store's default
// `checkpointPages`; SQLite's is 1,000), and closing the database is timed: it checkpoints what the
// run left in the WAL, so neither side defers its checkpoint work past the clock.
// Where peers are favoured everywhere: our time runs from run() to the result and includes plan
// validation and the lease; LangGraph's compile and Mastra's workflow build are not counted.
// Concurrency is 16 for Stepwise and LangGraph (maxConcurrency); Mastra's parallel block has no
// bound and runs every branch at once.
//
// Protocol (bench/README.md): gc() before every timed run of every contender; before each size's
// rounds, warm-up runs of every contender (WARM_STEPS steps each, on plans of at most 1,000 steps:
// see warmUp); rounds in one order, then its reverse. Each size's table prints as soon as that size is done.
//
// `--before <rev>` also runs our contenders as built at that commit (a worktree, see
// ../_worktree.mjs), interleaved with this checkout's in every round, and adds the columns
// `<rev> µs/step` and `HEAD / <rev>`: the no-regression check of a change.
//
// LangGraph's time per node grows with the graph (each superstep scans every channel): a 10,000-node
// chain takes many minutes per run. LangGraph runs up to PEER_MAX_STEPS per shape in the tables
// (default chain=1000,fan-out=10000); above that its growth curve is measured once per size on
// MemorySaver (LANGGRAPH_CURVE, default 500,1000,2000) and extrapolated to the largest size,
// labelled as such. Mastra runs at every size.
//
//   [ROUNDS=3] node bench/engine-dag/peers.mjs [sizes=100,1000,10000] [--before <rev>]
// (more rounds narrow a before/after ratio that the 100-step runs spread over ±30% with 3)
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutsFromArguments } from '../_packages.mjs';
import { median, requireGc, writeResults } from '../_protocol.mjs';
import { noopChain, noopFanOut, noopTools } from '../_workloads.mjs';
import { buildGraph, invoke, savers } from './_langgraph.mjs';

requireGc();
const { checkouts, rest } = await checkoutsFromArguments();
const current = checkouts[checkouts.length - 1].packages;

setMaxListeners(0);
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning.name !== 'MaxListenersExceededWarning') console.warn(warning);
});

const SIZES = (rest[0] ?? '100,1000,10000').split(',').map(Number);
const PEER_MAX_STEPS = Object.fromEntries(
  (process.env.PEER_MAX_STEPS ?? 'chain=1000,fan-out=10000').split(',').map((entry) => {
    const [shape, steps] = entry.split('=');
    return [shape, Number(steps)];
  }),
);
const LANGGRAPH_CURVE = (process.env.LANGGRAPH_CURVE ?? '500,1000,2000').split(',').map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WARM_STEPS = Number(process.env.WARM_STEPS ?? 4000);
const WARM_PLAN_MAX = 1000;
const CONCURRENCY = 16;
const require = createRequire(import.meta.url);
const mastraVersion = require('@mastra/core/package.json').version;
const { createStep, createWorkflow } = await import('@mastra/core/workflows');
const { z } = await import('zod');

const toolsByCheckout = new Map(checkouts.map(({ packages }) => [packages, noopTools(packages)]));
const shapes = {
  chain: (steps) => noopChain(current, steps),
  'fan-out': (steps) => noopFanOut(current, steps),
};

const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-peers-'));
let files = 0;
const path = () => join(directory, `db-${files++}.db`);

/** One run of ours, with the packages of one checkout (this one unless given). */
async function ours(plan, synchronous, durability = 'step', packages = current) {
  const { core, dag, sqlite } = packages;
  const tools = toolsByCheckout.get(packages);
  const store = synchronous ? sqlite.createSqliteStore({ path: path(), synchronous }) : new core.MemoryStore();
  await store.ready;
  globalThis.gc();
  const started = performance.now();
  const result = await dag.dagEngine({ tools, store, concurrency: CONCURRENCY, durability }).run(plan).result;
  await store.close();
  const ms = performance.now() - started;
  if (result.status !== 'completed') throw new Error(`stepwise run ended ${result.status}`);
  return ms;
}

async function langgraph(plan, synchronous, durability) {
  const saver = synchronous ? savers.SqliteSaver(path(), synchronous) : savers.MemorySaver();
  const graph = buildGraph(plan, async () => undefined, saver);
  globalThis.gc();
  const started = performance.now();
  await invoke(graph, plan, CONCURRENCY, durability);
  saver.db?.close();
  const ms = performance.now() - started;
  return ms;
}

const any = z.any();
const mastraStep = (id) => createStep({ id, inputSchema: any, outputSchema: any, execute: async () => ({}) });
let workflows = 0;
/** The plan as a Mastra workflow: `.then` for a chain; `.then(root).parallel(middle).then(join)` for a fan-out. */
function mastraWorkflow(plan, shape) {
  let workflow = createWorkflow({ id: `bench_${workflows++}`, inputSchema: any, outputSchema: any });
  if (shape === 'chain') for (const step of plan.steps) workflow = workflow.then(mastraStep(step.id));
  else {
    workflow = workflow
      .then(mastraStep('root'))
      .parallel(plan.steps.slice(1, -1).map((step) => mastraStep(step.id)))
      .then(mastraStep('join'));
  }
  return workflow.commit();
}

async function mastra(plan, shape) {
  const workflow = mastraWorkflow(plan, shape);
  globalThis.gc();
  const started = performance.now();
  const run = await workflow.createRunAsync();
  const result = await run.start({ inputData: {} });
  const ms = performance.now() - started;
  if (result.status !== 'success') throw new Error(`mastra run ended ${result.status}`);
  return ms;
}

/** Each pair: our contender and theirs, by durability. */
const pairs = [
  {
    durability: 'memory',
    peer: 'LangGraph MemorySaver',
    capped: true,
    ours: (p, packages) => ours(p, undefined, undefined, packages),
    theirs: (p) => langgraph(p),
  },
  {
    durability: 'memory',
    peer: `Mastra ${mastraVersion}`,
    ours: (p, packages) => ours(p, undefined, undefined, packages),
    theirs: (p, shape) => mastra(p, shape),
  },
  {
    durability: 'NORMAL',
    capped: true,
    peer: 'LangGraph SqliteSaver, sync',
    ours: (p, packages) => ours(p, 'NORMAL', undefined, packages),
    theirs: (p) => langgraph(p, 'NORMAL', 'sync'),
  },
  {
    durability: 'FULL',
    capped: true,
    peer: 'LangGraph SqliteSaver, sync',
    ours: (p, packages) => ours(p, 'FULL', undefined, packages),
    theirs: (p) => langgraph(p, 'FULL', 'sync'),
  },
  {
    durability: 'async',
    capped: true,
    peer: 'LangGraph SqliteSaver NORMAL, async',
    ours: (p, packages) => ours(p, 'NORMAL', 'batched', packages),
    theirs: (p) => langgraph(p, 'NORMAL', 'async'),
  },
];

const loadAtStart = loadavg()[0];

/**
 * Every timed run of one size and shape, in round order: each pair's contenders of ours (one per
 * checkout), then the peer where it runs. Rounds alternate this order and its reverse, so neither
 * side always runs right after the same other contender.
 */
function runsOf(shape, runs) {
  const sequence = [];
  for (const [index, pair] of pairs.entries()) {
    for (const [at, { packages }] of checkouts.entries())
      sequence.push({ index, at, run: (p) => pair.ours(p, packages) });
    if (runs(pair)) sequence.push({ index, at: 'theirs', run: (p) => pair.theirs(p, shape) });
  }
  return sequence;
}

/**
 * Untimed runs of every contender before a size's rounds: enough for WARM_STEPS steps each (at
 * least 2 runs, at most 20), on the size's own plan up to WARM_PLAN_MAX steps and on a plan of that
 * many steps above it. One run of a 50-step plan, as before, left most of the optimizing compiler's
 * work in the 100-step rounds: the same contender of ours measured 42 and 80 µs/step in two rows.
 */
async function warmUp(sequence, shape, steps) {
  const plan = shapes[shape](Math.min(steps, WARM_PLAN_MAX));
  const count = Math.min(20, Math.max(2, Math.ceil(WARM_STEPS / Math.min(steps, WARM_PLAN_MAX))));
  for (let index = 0; index < count; index++) for (const { run } of sequence) await run(plan);
}

/** A table row: ours (this checkout) against the peer, and against the `--before` commit when given. */
function rowOf(shape, steps, pair, sample, peerRan) {
  const oursMs = median(sample.ours[sample.ours.length - 1]);
  const theirsMs = peerRan ? median(sample.theirs) : undefined;
  const row = {
    shape,
    steps,
    durability: pair.durability,
    peer: pair.peer,
    'ours µs/step': ((oursMs * 1000) / steps).toFixed(1),
    'peer µs/step': theirsMs === undefined ? 'see curve' : ((theirsMs * 1000) / steps).toFixed(1),
    'ours / peer': theirsMs === undefined ? '' : (oursMs / theirsMs).toFixed(3),
  };
  if (checkouts.length === 2) {
    const beforeMs = median(sample.ours[0]);
    row[`${checkouts[0].label} µs/step`] = ((beforeMs * 1000) / steps).toFixed(1);
    row[`HEAD / ${checkouts[0].label}`] = (oursMs / beforeMs).toFixed(3);
  }
  return row;
}

const results = [];
console.log(
  `Stepwise dag engine vs LangGraph.js and Mastra ${mastraVersion} (node ${process.version}, load average ${loadAtStart.toFixed(1)} at the start; median of ${ROUNDS} interleaved rounds after a warm-up; concurrency ${CONCURRENCY})`,
);
console.log('target: ours / peer ≤ 1 at every size and equal durability (below 1 is faster)');
for (const steps of SIZES) {
  const rows = [];
  for (const shape of Object.keys(shapes)) {
    const plan = shapes[shape](steps);
    const runs = (pair) => !pair.capped || steps <= (PEER_MAX_STEPS[shape] ?? Infinity);
    const samples = pairs.map(() => ({ ours: checkouts.map(() => []), theirs: [] }));
    const sequence = runsOf(shape, runs);
    await warmUp(sequence, shape, steps);
    const reversed = [...sequence].reverse();
    for (let round = 0; round < ROUNDS; round++) {
      for (const { index, at, run } of round % 2 === 0 ? sequence : reversed) {
        const ms = await run(plan);
        if (at === 'theirs') samples[index].theirs.push(ms);
        else samples[index].ours[at].push(ms);
      }
    }
    for (const [index, pair] of pairs.entries()) rows.push(rowOf(shape, steps, pair, samples[index], runs(pair)));
  }
  console.log(`\n${steps.toLocaleString('en')} steps (load average ${loadavg()[0].toFixed(1)})`);
  console.table(rows);
  results.push(...rows);
}

const largest = Math.max(...SIZES);
const curveShapes = Object.keys(shapes).filter((shape) => largest > (PEER_MAX_STEPS[shape] ?? Infinity));
const curve = [];
if (curveShapes.length > 0) {
  console.log(
    `\nLangGraph above its cap (${curveShapes.map((shape) => `${shape} ${PEER_MAX_STEPS[shape]}`).join(', ')} steps): MemorySaver, one run per size (its fastest saver), and ours on MemoryStore beside it`,
  );
  for (const shape of curveShapes) {
    const points = [];
    for (const steps of LANGGRAPH_CURVE) {
      const plan = shapes[shape](steps);
      const theirs = await langgraph(plan);
      const mine = await ours(plan);
      points.push({ steps, theirs });
      curve.push({
        shape,
        steps,
        'LangGraph µs/step': ((theirs * 1000) / steps).toFixed(1),
        'ours µs/step': ((mine * 1000) / steps).toFixed(1),
        'ours / LangGraph': (mine / theirs).toFixed(4),
      });
    }
    // Time grows as steps^k between the last two sizes; extrapolated (not measured) to the largest size.
    const [a, b] = points.slice(-2);
    const k = Math.log(b.theirs / a.theirs) / Math.log(b.steps / a.steps);
    const estimate = b.theirs * (largest / b.steps) ** k;
    curve.push({
      shape,
      steps: largest,
      'LangGraph µs/step': `≈ ${((estimate * 1000) / largest).toFixed(0)} (extrapolated, time ∝ steps^${k.toFixed(2)}: ≈ ${(estimate / 1000).toFixed(0)} s a run)`,
      'ours µs/step': '',
      'ours / LangGraph': '',
    });
  }
  console.table(curve);
}
console.log(`load average at the end: ${loadavg()[0].toFixed(1)}`);
// The peers' figures of a before/after run were measured in that same run: the README's table
// (`peers`) may come from either.
writeResults('peers', { sizes: SIZES, rows: results, curve });
if (checkouts.length === 2) writeResults('peers-before-after', { sizes: SIZES, rows: results, curve });
rmSync(directory, { recursive: true, force: true });
