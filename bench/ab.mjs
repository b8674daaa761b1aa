// The no-regression check of a change, one build per process: a scenario runs in a fresh process
// for this checkout and for `--before <rev>` (its worktree, see _worktree.mjs), the two alternating
// (before first in odd pairs, this checkout first in even ones), PAIRS times. Each process warms up,
// then times ROUNDS runs and reports their median; the bench prints every process's median, the
// median of each build's, their ratio and how many pairs this checkout won.
//
// Why separate processes: two builds in one process (the `--before` of fixed-cost, peers,
// chain-floor) share the heap, the collector and V8's caches, and each one's garbage and compiled
// code weigh on the other's runs; small memory runs there moved 10-50 % between builds of
// unchanged code. Here each build has a process to itself, and the machine's drift falls on both
// builds alike because they alternate.
//
// Scenarios (a no-op `read` tool, `MemoryStore` unless named):
//   one-step     a one-step plan on one reused dag engine: µs per run (500 runs a round, no collection
//                forced: the steady state; a `gc()` before each round makes its first runs several
//                times slower while the young generation grows back, see fixed-cost.mjs)
//   chain        a 2,000-step chain, a new dag engine and store per run: µs per step
//   fan-out      1 -> 998 -> 1 on the dag engine, a new engine and store per run: µs per step
//   sqlite-chain a 2,000-step chain on SQLite (`NORMAL`), a new database per run: µs per step
//
//   node bench/ab.mjs --before <rev> [scenario=one-step] [pairs=5]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { repositoryRoot, stepwisePackages } from './_packages.mjs';
import { machineLine, median, requireGc } from './_protocol.mjs';
import { noopChain, noopFanOut, noopTools } from './_workloads.mjs';
import { prepareWorktree } from './_worktree.mjs';

const WARM_UP = 8;
const ROUNDS = 9;
const ONE_STEP_RUNS = 500;

/** Each scenario: `round()` runs once and resolves to the figure of that round (µs per run or per step). */
const scenarios = {
  'one-step': (packages) => {
    const { core, dag } = packages;
    const plan = { id: 'one', version: 1, goal: 'one step', steps: [{ id: 'only', tool: 'noop', args: {} }] };
    const engine = dag.dagEngine({ tools: noopTools(packages), store: new core.MemoryStore() });
    return async () => {
      const started = performance.now();
      for (let index = 0; index < ONE_STEP_RUNS; index++) {
        const result = await engine.run(plan).result;
        if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
      }
      return ((performance.now() - started) * 1000) / ONE_STEP_RUNS;
    };
  },
  chain: (packages) => perStep(packages, noopChain(packages, 2000)),
  'fan-out': (packages) => perStep(packages, noopFanOut(packages, 1000)),
  'sqlite-chain': (packages) => perStep(packages, noopChain(packages, 2000), 'NORMAL'),
};

/**
 * A round that runs `plan` once on a new engine and store (a new database for SQLite, opened before
 * the clock, closed on it), after a collection (bench/README.md).
 */
function perStep(packages, plan, synchronous) {
  const { core, dag, sqlite } = packages;
  const tools = noopTools(packages);
  const directory = synchronous ? mkdtempSync(join(tmpdir(), 'stepwise-ab-')) : undefined;
  let files = 0;
  process.on('exit', () => directory && rmSync(directory, { recursive: true, force: true }));
  return async () => {
    const store = synchronous
      ? sqlite.createSqliteStore({ path: join(directory, `${files++}.db`), synchronous })
      : new core.MemoryStore();
    await store.ready;
    globalThis.gc();
    const started = performance.now();
    const result = await dag.dagEngine({ tools, store }).run(plan).result;
    await store.close();
    if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
    return ((performance.now() - started) * 1000) / plan.steps.length;
  };
}

async function child(root, scenario) {
  const round = scenarios[scenario](await stepwisePackages(root));
  for (let index = 0; index < WARM_UP; index++) await round();
  const figures = [];
  for (let index = 0; index < ROUNDS; index++) figures.push(await round());
  process.stdout.write(`${JSON.stringify({ median: median(figures) })}\n`);
}

function parent(argv) {
  const rest = [...argv];
  const at = rest.indexOf('--before');
  if (at < 0 || !rest[at + 1]) throw new Error('usage: node bench/ab.mjs --before <rev> [scenario] [pairs]');
  const [, before] = rest.splice(at, 2);
  const scenario = rest[0] ?? 'one-step';
  if (!scenarios[scenario])
    throw new Error(`unknown scenario ${scenario}: one of ${Object.keys(scenarios).join(', ')}`);
  const pairs = Number(rest[1] ?? 5);
  const builds = [
    { label: before, root: prepareWorktree(before), medians: [] },
    { label: 'HEAD', root: repositoryRoot, medians: [] },
  ];
  const self = fileURLToPath(import.meta.url);
  const unit = scenario === 'one-step' ? 'µs per run' : 'µs per step';
  console.log(
    `${scenario}: ${pairs} pairs of processes, ${before} and HEAD alternating; ${machineLine()} at the start`,
  );
  let won = 0;
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? builds : [...builds].reverse();
    for (const build of order) {
      const output = execFileSync(process.execPath, ['--expose-gc', self, '--child', build.root, scenario], {
        encoding: 'utf8',
      });
      build.medians.push(JSON.parse(output.trim().split('\n').at(-1)).median);
    }
    const [old, now] = builds.map((build) => build.medians.at(-1));
    if (now < old) won += 1;
    console.log(
      `  pair ${pair + 1}: ${before} ${old.toFixed(1)}, HEAD ${now.toFixed(1)} ${unit} (HEAD / ${before} ${(now / old).toFixed(3)})`,
    );
  }
  const [old, now] = builds.map((build) => median(build.medians));
  console.log(
    `median ${before} ${old.toFixed(1)}, HEAD ${now.toFixed(1)} ${unit}: HEAD / ${before} ${(now / old).toFixed(3)}; HEAD faster in ${won} of ${pairs} pairs; ${machineLine()} at the end`,
  );
}

requireGc();
if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4]);
else parent(process.argv.slice(2));
