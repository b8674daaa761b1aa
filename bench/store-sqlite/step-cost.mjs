// What a durable step costs through the public engine (@stepwise/engine-dag) on @stepwise/store-sqlite:
// µs per no-op step for a chain (one step at a time) and a fan-out (1 → N → 1) at concurrency 16,
// at synchronous=NORMAL and FULL, next to the same runs on core's MemoryStore (measured in the same
// process, interleaved round by round, median of ROUNDS after a warm-up).
// The tool is a `read` tool (idempotent): its call and result are committed together, and the
// steps of a fan-out share commits. `noop_write` (not idempotent) shows the two-commit path.
// Each SQLite level runs with the engine's default `durability: 'step'` (a step's end committed
// before a step that depends on it starts) and with `durability: 'batched'` (an idempotent step's
// dependents need not wait for its end's commit; a crash can run such steps again). A write tool's
// steps commit alike in both.
//
// Protocol (bench/README.md): gc() before every timed run, a warm-up, contenders interleaved round
// by round, the median; the rows are written to bench/results/step-cost.json for the README.
//
// Targets: ≤ 100 µs/step for the chain at NORMAL; ≤ 50 µs/step amortised for the fan-out at NORMAL.
//
//   node bench/store-sqlite/step-cost.mjs [steps=2000]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as core from '@stepwise/core';
import { chainPlan, makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { machineLine, median, requireGc, writeResults } from '../_protocol.mjs';
import { noopTools } from '../_workloads.mjs';

requireGc();
const STEPS = Number(process.argv[2] ?? 2000);
const ROUNDS = 3;
const CONCURRENCY = 16;
const TARGET_CHAIN = 100;
const TARGET_FAN_OUT = 50;

const tools = noopTools({ core });
tools.register(
  core.defineTool({
    name: 'noop_write',
    description: 'nothing, declared not idempotent',
    input: { type: 'object' },
    effect: 'write',
    execute: () => ({}),
  }),
);

function chain(steps, tool) {
  const plan = chainPlan(steps, tool);
  return { ...plan, steps: plan.steps.map((step) => ({ ...step, args: {} })) };
}

function fanOut(steps, tool) {
  const middle = Array.from({ length: steps - 2 }, (_, index) => ({ id: `m${index}`, tool, dependsOn: ['root'] }));
  return makePlan([{ id: 'root', tool }, ...middle, { id: 'join', tool, dependsOn: middle.map((step) => step.id) }]);
}

const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-step-cost-'));
let files = 0;
const sqlite = (synchronous) => () => createSqliteStore({ path: join(directory, `${files++}.db`), synchronous });
/** Each contender: a store and the engine's durability (`batched`: idempotent step ends share commits). */
const stores = {
  memory: { store: () => new core.MemoryStore(), durability: 'step' },
  'sqlite NORMAL': { store: sqlite('NORMAL'), durability: 'step' },
  'sqlite FULL': { store: sqlite('FULL'), durability: 'step' },
  'sqlite NORMAL batched': { store: sqlite('NORMAL'), durability: 'batched' },
  'sqlite FULL batched': { store: sqlite('FULL'), durability: 'batched' },
};

/**
 * µs per step of one run: from run() to its result (validation, lease and the journal included)
 * and the store's close, which checkpoints what the run left in the WAL: the store checkpoints
 * every `checkpointPages` (10,000) pages, about what a 2,000-step chain writes and more than a
 * fan-out's shared commits do, so a run can end with most of a checkpoint's work still pending,
 * and that work is the run's.
 */
async function measure(plan, storeName) {
  const contender = stores[storeName];
  const store = contender.store();
  await store.ready;
  const engine = dagEngine({ tools, store, concurrency: CONCURRENCY, durability: contender.durability });
  globalThis.gc();
  const started = performance.now();
  const result = await engine.run(plan).result;
  await store.close();
  const ms = performance.now() - started;
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  return (ms * 1000) / plan.steps.length;
}

const cases = [
  { shape: 'chain', tool: 'noop', plan: chain(STEPS, 'noop') },
  { shape: `fan-out, concurrency ${CONCURRENCY}`, tool: 'noop', plan: fanOut(STEPS, 'noop') },
  { shape: 'chain', tool: 'noop_write', plan: chain(STEPS, 'noop_write') },
  { shape: `fan-out, concurrency ${CONCURRENCY}`, tool: 'noop_write', plan: fanOut(STEPS, 'noop_write') },
];

console.log(`${machineLine()} at the start`);
// Warm-up: every case on every store once, at a fifth of the size.
for (const entry of cases) {
  const small = entry.shape === 'chain' ? chain(STEPS / 5, entry.tool) : fanOut(STEPS / 5, entry.tool);
  for (const storeName of Object.keys(stores)) await measure(small, storeName);
}
const samples = new Map();
for (let round = 0; round < ROUNDS; round++) {
  for (const entry of cases) {
    for (const storeName of Object.keys(stores)) {
      const key = `${entry.shape}|${entry.tool}|${storeName}`;
      samples.set(key, [...(samples.get(key) ?? []), await measure(entry.plan, storeName)]);
    }
  }
}
rmSync(directory, { recursive: true, force: true });

console.log(
  `durable step cost through @stepwise/engine-dag, ${STEPS.toLocaleString('en')} no-op steps (node ${process.version}, load average ${loadavg()[0].toFixed(1)}; median of ${ROUNDS} interleaved rounds after a warm-up)`,
);
console.log(`targets at NORMAL, read tool: chain ≤ ${TARGET_CHAIN} µs/step; fan-out ≤ ${TARGET_FAN_OUT} µs/step\n`);
const rows = [];
for (const entry of cases) {
  const at = (storeName) => median(samples.get(`${entry.shape}|${entry.tool}|${storeName}`));
  const memory = at('memory');
  const normal = at('sqlite NORMAL');
  const full = at('sqlite FULL');
  const normalBatched = at('sqlite NORMAL batched');
  const fullBatched = at('sqlite FULL batched');
  const target = entry.tool === 'noop' ? (entry.shape === 'chain' ? TARGET_CHAIN : TARGET_FAN_OUT) : undefined;
  const verdict = (value) => (value <= target ? 'met' : 'NOT met');
  rows.push({
    shape: entry.shape,
    tool: entry.tool === 'noop' ? 'read (idempotent)' : 'write (not idempotent)',
    'memory µs/step': memory.toFixed(1),
    'NORMAL µs/step': normal.toFixed(1),
    'FULL µs/step': full.toFixed(1),
    'NORMAL batched': normalBatched.toFixed(1),
    'FULL batched': fullBatched.toFixed(1),
    'NORMAL / memory': (normal / memory).toFixed(2),
    target: target === undefined ? '' : `≤ ${target}: step ${verdict(normal)}, batched ${verdict(normalBatched)}`,
  });
}
console.table(rows);
console.log(`load average at the end: ${loadavg()[0].toFixed(1)}`);
writeResults('step-cost', { steps: STEPS, rounds: ROUNDS, concurrency: CONCURRENCY, rows });
