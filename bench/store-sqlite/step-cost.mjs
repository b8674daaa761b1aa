// What a durable step costs through the public engine (@stepwise/engine-dag) on @stepwise/store-sqlite:
// µs per no-op step for a chain (one step at a time) and a fan-out (1 → N → 1) at concurrency 16,
// at synchronous=NORMAL and FULL, next to the same runs on core's MemoryStore (measured in the same
// process, interleaved round by round, median of ROUNDS after a warm-up).
// The tool is a `read` tool (idempotent): its call and result are committed together, and the
// steps of a fan-out share commits. `noop_write` (not idempotent) shows the two-commit path.
//
// Targets: ≤ 100 µs/step for the chain at NORMAL; ≤ 50 µs/step amortised for the fan-out at NORMAL.
//
//   node bench/store-sqlite/step-cost.mjs [steps=2000]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, MemoryStore, ToolRegistry } from '@stepwise/core';
import { chainPlan, makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';

const STEPS = Number(process.argv[2] ?? 2000);
const ROUNDS = 3;
const CONCURRENCY = 16;
const TARGET_CHAIN = 100;
const TARGET_FAN_OUT = 50;

const tools = new ToolRegistry([
  defineTool({ name: 'noop', description: 'nothing', input: { type: 'object' }, effect: 'read', execute: () => ({}) }),
  defineTool({
    name: 'noop_write',
    description: 'nothing, declared not idempotent',
    input: { type: 'object' },
    effect: 'write',
    execute: () => ({}),
  }),
]);

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
const stores = {
  memory: () => new MemoryStore(),
  'sqlite NORMAL': () => createSqliteStore({ path: join(directory, `n${files++}.db`), synchronous: 'NORMAL' }),
  'sqlite FULL': () => createSqliteStore({ path: join(directory, `f${files++}.db`), synchronous: 'FULL' }),
};

/** µs per step of one run (from run() to its result: validation, lease and the journal included). */
async function measure(plan, storeName) {
  const store = stores[storeName]();
  await store.ready;
  const engine = dagEngine({ tools, store, concurrency: CONCURRENCY });
  const started = performance.now();
  const result = await engine.run(plan).result;
  const ms = performance.now() - started;
  await store.close();
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  return (ms * 1000) / plan.steps.length;
}

const cases = [
  { shape: 'chain', tool: 'noop', plan: chain(STEPS, 'noop') },
  { shape: `fan-out, concurrency ${CONCURRENCY}`, tool: 'noop', plan: fanOut(STEPS, 'noop') },
  { shape: 'chain', tool: 'noop_write', plan: chain(STEPS, 'noop_write') },
  { shape: `fan-out, concurrency ${CONCURRENCY}`, tool: 'noop_write', plan: fanOut(STEPS, 'noop_write') },
];
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

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
  const target = entry.tool === 'noop' ? (entry.shape === 'chain' ? TARGET_CHAIN : TARGET_FAN_OUT) : undefined;
  rows.push({
    shape: entry.shape,
    tool: entry.tool === 'noop' ? 'read (idempotent)' : 'write (not idempotent)',
    'memory µs/step': memory.toFixed(1),
    'NORMAL µs/step': normal.toFixed(1),
    'FULL µs/step': full.toFixed(1),
    'NORMAL / memory': (normal / memory).toFixed(2),
    'FULL / NORMAL': (full / normal).toFixed(2),
    target: target === undefined ? '' : `≤ ${target}: ${normal <= target ? 'met' : 'NOT met'}`,
  });
}
console.table(rows);
console.log(`load average at the end: ${loadavg()[0].toFixed(1)}`);
