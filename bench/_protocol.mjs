// The measuring protocol every bench applies to every contender alike (see bench/README.md):
// a full garbage collection before each timed run, warm-up runs first, contenders interleaved
// round by round, the median of the rounds, wall and CPU time both, the load average printed.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

/** Re-runs this script with `--expose-gc` when it was started without: the protocol needs `gc()`. */
export function requireGc() {
  if (typeof globalThis.gc === 'function') return;
  const result = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  process.exit(result.status ?? 1);
}

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * One timed run: a full collection first (so no contender pays for another's garbage; `collect:
 * false` skips it, for a steady state where each run lives with the heap the runs before it left),
 * then wall and CPU (user + system, this process) milliseconds of `run`. `run` may return a promise.
 */
export async function timed(run, { collect = true } = {}) {
  if (collect) globalThis.gc?.();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await run();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, value };
}

/**
 * A contender is a function, or `{ setup, run }`: `setup()` runs untimed before every run (warm-ups
 * included) and what it resolves to is passed to `run` — for work that is not what the bench
 * measures and that each run needs anew (opening a new database file), applied to every contender
 * alike.
 */
const partsOf = (contender) => (typeof contender === 'function' ? { run: contender } : contender);

/**
 * Runs each contender `warmUp` times untimed, then `rounds` rounds in which every contender runs
 * once (`collect` as `timed`'s): in the given order on even rounds, the reverse on odd ones, so no
 * contender always runs right after the same other one (whose garbage and compiled code weigh on
 * the next run; a build always run second measured up to 12 % slower with unchanged code). Returns
 * name → { ms: [...], cpuMs: [...] }.
 */
export async function interleave(contenders, { rounds, warmUp = 1, collect = true }) {
  for (let index = 0; index < warmUp; index++) {
    for (const contender of Object.values(contenders)) {
      const { setup, run } = partsOf(contender);
      await run(setup ? await setup() : undefined);
    }
  }
  const samples = Object.fromEntries(Object.keys(contenders).map((name) => [name, { ms: [], cpuMs: [] }]));
  const entries = Object.entries(contenders);
  const reversed = [...entries].reverse();
  for (let round = 0; round < rounds; round++) {
    for (const [name, contender] of round % 2 === 0 ? entries : reversed) {
      const { setup, run } = partsOf(contender);
      const prepared = setup ? await setup() : undefined;
      const { ms, cpuMs } = await timed(() => run(prepared), { collect });
      samples[name].ms.push(ms);
      samples[name].cpuMs.push(cpuMs);
    }
  }
  return samples;
}

export const loadAverage = () => loadavg()[0];

/** One line naming the machine's state, printed at the start and end of every bench. */
export const machineLine = () =>
  `node ${process.version}, load average ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}`;

/**
 * Writes `bench/results/<name>.json` (ignored by git): what `scripts/bench-figures.mjs` turns into
 * the README tables. Holds the command line, the time, the load averages and the bench's data.
 */
export function writeResults(name, data) {
  const directory = join(new URL('.', import.meta.url).pathname, 'results');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `${name}.json`);
  const record = {
    bench: name,
    command: `node ${process.argv.slice(1).join(' ')}`.replace(`${process.cwd()}/`, ''),
    at: new Date().toISOString(),
    node: process.version,
    load: loadavg(),
    ...data,
  };
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}
