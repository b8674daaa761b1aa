// Scheduler scaling: µs per step and peak RSS for a chain and a 1 → N → 1 fan-out of no-op
// steps at 1k, 10k and 100k steps, on the memory store and on SQLite (synchronous=NORMAL),
// each run in a fresh child process so one size's heap does not colour the next, after
// warm-up runs in that process; median of ROUNDS interleaved rounds. Peak RSS is the process's
// high-water mark (maxRSS); it varies with when V8 collects, so its range is printed too, and the
// heap still live after a GC at the end. Both include the run's result (every step's result).
// Targets: µs/step flat within 1.5× from 1k to 100k; peak RSS < 300 MB at 100k on SQLite.
// Then the 100k SQLite runs again with a 1 KB output per step, keeping every output (the default
// `retainOutputs: 'all'`) and keeping only those a pending step references (`'referenced'`).
//
// Protocol (bench/README.md). Brought in line with it on 2026-11-27, through _protocol.mjs's
// `timed`: gc() right before the clock (there was store opening between them); CPU time (user +
// system of the child) printed beside wall time (there was none); the SQLite store's migrations
// awaited before the clock (they ran inside it: about 30 ms per file, some 15% of a 1,000-step
// SQLite cell) and its close, which checkpoints the WAL, inside it (it was outside); the load
// printed at the start as well as at the end. And the warm-up's store is let go before the timed
// run: on MemoryStore it kept the warm-up's events alive (about 15 MB of a 1,000-step cell's live
// heap). Warm-up runs in every child and interleaved rounds as before.
//
//   node bench/engine-dag/scale.mjs [--after <rev>]   (--after: measure that commit's worktree,
//                                                       built once, instead of this checkout's dist)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { machineLine, median, timed, writeResults } from '../_protocol.mjs';

const SIZES = [1_000, 10_000, 100_000];
const ROUNDS = 3;
const SHAPES = ['chain', 'fan-out'];
const STORES = ['memory', 'sqlite'];
const WARM_UP = { runs: 5, steps: 2_000 };
const OUTPUT_BYTES = 1024;
const TARGETS = { ratio: 1.5, peakMb: 300 };

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

/**
 * Only the three packages the run needs, from `root`'s dist (`_packages.mjs` loads every engine,
 * whose modules would count in the child's RSS and heap).
 */
const load = (root, name) => import(pathToFileURL(join(root, 'packages', name, 'dist', 'index.js')).href);

/**
 * Warm-up: runs of the same shape at 2,000 steps on their own store, so the JIT has optimised the hot
 * path before the timed run (it takes several runs; without them the 1k cell mostly measures
 * compilation, at 5-10x the steady cost). A function of its own, so that nothing the timed run's
 * frame holds keeps that store alive: a MemoryStore keeps every event, which the live heap measured
 * after the timed run would count.
 */
async function warmUp(openStore, engineOf, shape) {
  const store = await openStore();
  for (let round = 0; round < WARM_UP.runs; round++) await engineOf(store).run(plan(shape, WARM_UP.steps)).result;
  await store.close();
}

async function child(root, shape, size, storeKind, outputBytes, retainOutputs) {
  const [{ defineTool, MemoryStore, ToolRegistry }, { dagEngine }, sqlite] = await Promise.all([
    load(root, 'core'),
    load(root, 'engine-dag'),
    storeKind === 'sqlite' ? load(root, 'store-sqlite') : undefined,
  ]);
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
  const directory = sqlite ? mkdtempSync(join(tmpdir(), 'stepwise-scale-')) : undefined;
  let files = 0;
  // Opening (for SQLite, creating the schema through its migrations) is not what is measured.
  const openStore = async () => {
    if (!sqlite) return new MemoryStore();
    const store = sqlite.createSqliteStore({ path: join(directory, `runs-${files++}.db`), synchronous: 'NORMAL' });
    await store.ready;
    return store;
  };
  await warmUp(openStore, (store) => dagEngine({ tools, store }), shape);
  const store = await openStore();
  const engine = dagEngine({ tools, store, retainOutputs });
  // The plan is built in the call, not kept: a host that loads a plan hands it over and drops it.
  // Closing is timed: it checkpoints what the run left in the WAL.
  const {
    ms,
    cpuMs,
    value: result,
  } = await timed(async () => {
    const ended = await engine.run(plan(shape, size)).result;
    await store.close();
    return ended;
  });
  // The kernel's high-water mark of the process (warm-up included, which stays far below): a
  // timer sampling RSS would miss the peak, since a run of synchronous tools on better-sqlite3
  // does not give timers a turn until it ends.
  const peak = process.resourceUsage().maxRSS * 1024;
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  // What the process still holds with the result in hand (and the closed store, which for
  // MemoryStore still holds every event), once garbage is collected: unlike the peak, this does
  // not depend on when V8 chose to collect. One turn of the event loop first: until then the
  // callbacks that resolved the result still hold the run's scheduler (about 50 MB at 100k
  // steps), which is not what a host keeps.
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc();
  const liveMb = process.memoryUsage().heapUsed / 2 ** 20;
  if (directory) rmSync(directory, { recursive: true, force: true });
  process.stdout.write(
    JSON.stringify({ micros: (ms * 1000) / size, cpuMicros: (cpuMs * 1000) / size, peakMb: peak / 2 ** 20, liveMb }),
  );
}

/** The cells of one round: every shape × store × size without output, then the 1 KB outputs. */
function cellsOf() {
  const cells = [];
  for (const shape of SHAPES) {
    for (const store of STORES) {
      for (const steps of SIZES) cells.push({ shape, store, steps, outputBytes: 0, retainOutputs: 'all' });
    }
  }
  for (const shape of SHAPES) {
    for (const retainOutputs of ['all', 'referenced']) {
      cells.push({ shape, store: 'sqlite', steps: SIZES.at(-1), outputBytes: OUTPUT_BYTES, retainOutputs });
    }
  }
  return cells.map((cell) => ({ ...cell, samples: [] }));
}

/** A cell's medians over the rounds, and its peak RSS range. */
function summary({ samples, ...cell }) {
  const of = (key) => median(samples.map((sample) => sample[key]));
  const peaks = samples.map((sample) => sample.peakMb);
  return {
    ...cell,
    micros: of('micros'),
    cpuMicros: of('cpuMicros'),
    peakMb: of('peakMb'),
    peakRange: [Math.min(...peaks), Math.max(...peaks)],
    liveMb: of('liveMb'),
  };
}

const fixed = (value, digits = 1) => value.toFixed(digits);
const rowLine = (row, first) =>
  `${first.padEnd(24)} ${fixed(row.micros).padStart(8)} ${fixed(row.cpuMicros).padStart(8)}  ${fixed(row.peakMb, 0).padStart(6)} (${row.peakRange.map((mb) => fixed(mb, 0)).join('–')})  ${fixed(row.liveMb, 0).padStart(6)}`;

/** Prints the tables and returns what the README renders. */
function report(rows) {
  const plain = rows.filter((row) => row.outputBytes === 0);
  console.log('shape    store   steps     µs/step  CPU µs   peak RSS MB (range)  live heap MB');
  const ratios = [];
  for (const shape of SHAPES) {
    for (const store of STORES) {
      const cell = plain.filter((row) => row.shape === shape && row.store === store);
      for (const row of cell)
        console.log(rowLine(row, `${shape.padEnd(8)} ${store.padEnd(7)} ${String(row.steps).padStart(7)}`));
      const [first, last] = [cell[0], cell.at(-1)];
      const ratio = { shape, store, wall: last.micros / first.micros, cpu: last.cpuMicros / first.cpuMicros };
      ratios.push({ ...ratio, met: ratio.wall <= TARGETS.ratio });
      console.log(
        `${shape.padEnd(8)} ${store.padEnd(7)} ${last.steps / 1000}k/${first.steps / 1000}k µs ratio ${fixed(ratio.wall, 2)}, CPU ${fixed(ratio.cpu, 2)} (target ≤ ${TARGETS.ratio})`,
      );
    }
  }
  const peaks = plain
    .filter((row) => row.store === 'sqlite' && row.steps === SIZES.at(-1))
    .map((row) => ({ shape: row.shape, peakMb: row.peakMb, met: row.peakMb < TARGETS.peakMb }));
  for (const peak of peaks)
    console.log(
      `${peak.shape} sqlite peak RSS ${fixed(peak.peakMb, 0)} MB at ${SIZES.at(-1)} steps (target < ${TARGETS.peakMb})`,
    );
  console.log(
    `\n${SIZES.at(-1)} steps on SQLite, each output ${OUTPUT_BYTES} bytes: every output kept, or only referenced ones`,
  );
  console.log('shape    retainOutputs      µs/step  CPU µs   peak RSS MB (range)  live heap MB');
  const outputs = rows.filter((row) => row.outputBytes > 0);
  for (const row of outputs) console.log(rowLine(row, `${row.shape.padEnd(8)} ${row.retainOutputs}`));
  console.log(
    'live heap: heap in use after a full GC at the end, the result still held (peak RSS depends on when V8 collects)',
  );
  return { ratios, peaks, rows: plain, outputs };
}

if (process.argv[2] === '--child') {
  const [root, shape, size, store, outputBytes, retainOutputs] = process.argv.slice(3);
  await child(root, shape, Number(size), store, Number(outputBytes), retainOutputs);
} else {
  const { repositoryRoot } = await import('../_packages.mjs');
  const after = process.argv.indexOf('--after');
  const root = after < 0 ? repositoryRoot : (await import('../_worktree.mjs')).prepareWorktree(process.argv[after + 1]);
  const self = fileURLToPath(import.meta.url);
  const measure = (cell) =>
    JSON.parse(
      execFileSync(
        process.execPath,
        [
          '--expose-gc',
          '--max-old-space-size=4096',
          self,
          '--child',
          root,
          cell.shape,
          String(cell.steps),
          cell.store,
          String(cell.outputBytes),
          cell.retainOutputs,
        ],
        { encoding: 'utf8' },
      ),
    );
  console.log(
    `scheduler scaling (dag engine, default concurrency 16, no-op tool), one child process per run, ${WARM_UP.runs} warm-up runs of ${WARM_UP.steps} steps in each, median of ${ROUNDS} interleaved rounds; ${machineLine()} at the start`,
  );
  const cells = cellsOf();
  // Rounds interleave the cells, so a burst of load on the machine does not land on one cell's runs.
  for (let round = 0; round < ROUNDS; round++) {
    for (const cell of cells) cell.samples.push(measure(cell));
  }
  const results = report(cells.map(summary));
  console.log(`at the end: ${machineLine()}`);
  writeResults('scale', {
    rounds: ROUNDS,
    warmUp: WARM_UP,
    sizes: SIZES,
    outputBytes: OUTPUT_BYTES,
    targets: TARGETS,
    ...results,
  });
}
