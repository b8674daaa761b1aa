// Scheduler scaling: µs per step and peak RSS for a chain and a 1 → N → 1 fan-out of no-op
// steps at 1k, 10k and 100k steps, on the memory store and on SQLite (synchronous=NORMAL),
// each run in a fresh child process so one size's heap does not colour the next, after
// warm-up runs in that process; median of ROUNDS interleaved rounds. Peak RSS is the process's
// high-water mark (maxRSS); it varies with when V8 collects, so its range is printed too, and the
// heap still live after a GC at the end. Both include the run's result (every step's result).
// Targets: µs/step flat within 1.5× from 1k to 100k; peak RSS < 300 MB at 100k on SQLite.
// Then the 100k SQLite runs again with a 1 KB output per step, keeping every output (the default
// `retainOutputs: 'all'`) and keeping only those a pending step references (`'referenced'`).
// Usage: node bench/engine-dag/scale.mjs [--child shape size store outputBytes retainOutputs]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SIZES = [1_000, 10_000, 100_000];
const ROUNDS = 3;
const SHAPES = ['chain', 'fan-out'];
const STORES = ['memory', 'sqlite'];

function plan(shape, size) {
  const steps = [];
  if (shape === 'chain') {
    for (let index = 0; index < size; index++) {
      steps.push({ id: `s${index}`, tool: 'noop', args: {}, ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}) });
    }
  } else {
    steps.push({ id: 'root', tool: 'noop', args: {} });
    for (let index = 0; index < size - 2; index++)
      steps.push({ id: `s${index}`, tool: 'noop', args: {}, dependsOn: ['root'] });
    steps.push({ id: 'join', tool: 'noop', args: {}, dependsOn: steps.slice(1).map((step) => step.id) });
  }
  return { id: `${shape}_${size}`, version: 1, goal: 'scale', steps };
}

async function child(shape, size, storeKind, outputBytes = 0, retainOutputs = 'all') {
  const { defineTool, MemoryStore, ToolRegistry } = await import('@stepwise/core');
  const { dagEngine } = await import('@stepwise/engine-dag');
  const tools = new ToolRegistry([
    defineTool({
      name: 'noop',
      description: 'nothing',
      input: { type: 'object' },
      effect: 'read',
      execute:
        outputBytes > 0
          ? (_input, context) => ({ step: context.stepId, data: 'x'.repeat(outputBytes) })
          : () => ({ ok: true }),
    }),
  ]);
  const directory = storeKind === 'sqlite' ? mkdtempSync(join(tmpdir(), 'stepwise-scale-')) : undefined;
  let files = 0;
  const openStore = async () => {
    if (!directory) return new MemoryStore();
    const { createSqliteStore } = await import('@stepwise/store-sqlite');
    return createSqliteStore({ path: join(directory, `runs-${files++}.db`), synchronous: 'NORMAL' });
  };
  // Warm-up: five runs of the same shape at 2,000 steps on their own store, so the JIT has
  // optimised the hot path before the timed run (it takes several runs; without them the 1k cell
  // mostly measures compilation, at 5-10x the steady cost).
  const warmStore = await openStore();
  for (let round = 0; round < 5; round++) await dagEngine({ tools, store: warmStore }).run(plan(shape, 2_000)).result;
  await warmStore.close();
  globalThis.gc?.();
  const store = await openStore();
  const engine = dagEngine({ tools, store, retainOutputs });
  const started = performance.now();
  // The plan is built in the call, not kept: a host that loads a plan hands it over and drops it.
  const result = await engine.run(plan(shape, size)).result;
  const elapsed = performance.now() - started;
  // The kernel's high-water mark of the process (warm-up included, which stays far below): a
  // timer sampling RSS would miss the peak, since a run of synchronous tools on better-sqlite3
  // does not give timers a turn until it ends.
  const peak = process.resourceUsage().maxRSS * 1024;
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  // What the process still holds with the result in hand, once garbage is collected: unlike the
  // peak, this does not depend on when V8 chose to collect.
  // One turn of the event loop first: until then the callbacks that resolved the result still hold
  // the run's scheduler (about 50 MB at 100k steps), which is not what a host keeps.
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc?.();
  const liveMb = process.memoryUsage().heapUsed / 2 ** 20;
  await store.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
  process.stdout.write(JSON.stringify({ microsPerStep: (elapsed * 1000) / size, peakMb: peak / 2 ** 20, liveMb }));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], Number(process.argv[4]), process.argv[5], Number(process.argv[6] ?? 0), process.argv[7]);
} else {
  const self = fileURLToPath(import.meta.url);
  const measure = (args) =>
    JSON.parse(
      execFileSync(process.execPath, ['--expose-gc', '--max-old-space-size=4096', self, '--child', ...args], {
        encoding: 'utf8',
      }),
    );
  const cells = [];
  for (const shape of SHAPES) {
    for (const storeKind of STORES) {
      for (const size of SIZES)
        cells.push({ shape, storeKind, size, args: [shape, String(size), storeKind], samples: [] });
    }
  }
  for (const shape of SHAPES) {
    for (const retain of ['all', 'referenced']) {
      cells.push({ shape, retain, args: [shape, '100000', 'sqlite', '1024', retain], samples: [] });
    }
  }
  // Rounds interleave the cells, so a burst of load on the machine does not land on one cell's runs.
  for (let round = 0; round < ROUNDS; round++) {
    for (const cell of cells) cell.samples.push(measure(cell.args));
  }
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const summary = (cell) => ({
    micros: median(cell.samples.map((sample) => sample.microsPerStep)),
    mb: median(cell.samples.map((sample) => sample.peakMb)),
    live: median(cell.samples.map((sample) => sample.liveMb)),
    range: `${Math.min(...cell.samples.map((sample) => sample.peakMb)).toFixed(0)}–${Math.max(...cell.samples.map((sample) => sample.peakMb)).toFixed(0)}`,
  });
  console.log(
    `scheduler scaling (dag engine, default concurrency 16, no-op tool), one child process per run, median of ${ROUNDS} interleaved rounds; node ${process.version}, load average ${loadavg()[0].toFixed(1)} at the end`,
  );
  console.log('shape    store   size     µs/step  peak RSS MB (range)  live heap MB');
  for (const shape of SHAPES) {
    for (const storeKind of STORES) {
      const rows = cells.filter((cell) => cell.shape === shape && cell.storeKind === storeKind).map(summary);
      for (const [index, row] of rows.entries()) {
        console.log(
          `${shape.padEnd(8)} ${storeKind.padEnd(7)} ${String(SIZES[index]).padStart(7)}  ${row.micros.toFixed(1).padStart(7)}  ${row.mb.toFixed(0).padStart(6)} (${row.range})  ${row.live.toFixed(0).padStart(6)}`,
        );
      }
      const ratio = rows[rows.length - 1].micros / rows[0].micros;
      console.log(`${shape.padEnd(8)} ${storeKind.padEnd(7)} 100k/1k µs ratio ${ratio.toFixed(2)} (target ≤ 1.5)`);
    }
  }
  console.log('\n100k steps on SQLite, each output 1 KB: every output kept, or only referenced ones');
  console.log('shape    retainOutputs  µs/step  peak RSS MB (range)  live heap MB');
  for (const cell of cells.filter((entry) => entry.retain)) {
    const row = summary(cell);
    console.log(
      `${cell.shape.padEnd(8)} ${cell.retain.padEnd(13)}  ${row.micros.toFixed(1).padStart(7)}  ${row.mb.toFixed(0).padStart(6)} (${row.range})  ${row.live.toFixed(0).padStart(6)}`,
    );
  }
  console.log(
    'live heap: heap in use after a full GC at the end, the result still held (peak RSS depends on when V8 collects)',
  );
}
