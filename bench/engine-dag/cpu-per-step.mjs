// CPU time per step (user + system, this process), the figure a loaded machine distorts least:
// wall-clock µs/step swings 2× with other processes on the cores, CPU time far less. A no-op
// chain and a 1 → N → 1 fan-out under the sequential and dag engines, on MemoryStore (core's work
// alone) and on a SQLite file (NORMAL, the default durability), beside the same graph in
// LangGraph.js (MemorySaver; compiled outside the timing, which favours it).
// Protocol (bench/README.md): gc() before every timed run, warm-up rounds, every contender
// interleaved in every round, the median. LangGraph's garbage is collected before whichever run
// comes next, outside the timing: that favours LangGraph.
//
// `--before <rev>` also runs our contenders as built at that commit (a worktree, see
// ../_worktree.mjs), interleaved with this checkout's in every round, and adds the after / before
// ratio of each; `--after <rev>` measures that commit in place of this checkout.
//
//   node bench/engine-dag/cpu-per-step.mjs [sizes = 1000] [rounds = 7] [--before <rev>] [--after <rev>]
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkoutsFromArguments } from '../_packages.mjs';
import { interleave, machineLine, median, requireGc, writeResults } from '../_protocol.mjs';
import { noopTools } from '../_workloads.mjs';
import { buildGraph, invoke, savers } from './_langgraph.mjs';

requireGc();
// LangGraph adds an abort listener per node to one signal.
setMaxListeners(0);
process.removeAllListeners('warning');

const { checkouts, rest } = await checkoutsFromArguments();
const SIZES = (rest[0] ?? '1000').split(',').map(Number);
const ROUNDS = Number(rest[1] ?? 7);
const WARM_UP = 2;
const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-cpu-'));
let files = 0;

function shapes(steps) {
  const noop = (id, dependsOn) => ({ id, tool: 'noop', args: {}, ...(dependsOn ? { dependsOn } : {}) });
  const ids = Array.from({ length: steps - 2 }, (_, index) => `m${index}`);
  return {
    chain: {
      id: 'chain',
      version: 1,
      goal: 'cpu',
      steps: Array.from({ length: steps }, (_, index) => noop(`s${index}`, index > 0 ? [`s${index - 1}`] : undefined)),
    },
    'fan-out': {
      id: 'fan',
      version: 1,
      goal: 'cpu',
      steps: [noop('root'), ...ids.map((id) => noop(id, ['root'])), noop('join', ids)],
    },
  };
}

/** Our contenders with one checkout's packages: engine × store. */
function oursOf(packages) {
  const { core, dag, sequential, sqlite } = packages;
  const tools = noopTools(packages);
  const completed = async (handle) => {
    const result = await handle.result;
    if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  };
  const sqliteStore = () => sqlite.createSqliteStore({ path: join(directory, `db-${files++}.db`) });
  return {
    'sequential memory': (plan) =>
      completed(
        sequential
          .sequentialEngine({ tools, store: new core.MemoryStore() })
          .run(plan, { authorization: core.approvePlan(plan, { by: 'bench' }) }),
      ),
    'dag memory': (plan) => completed(dag.dagEngine({ tools, store: new core.MemoryStore() }).run(plan)),
    'dag sqlite': async (plan) => {
      const store = sqliteStore();
      await store.ready;
      try {
        await completed(dag.dagEngine({ tools, store }).run(plan));
      } finally {
        await store.close();
      }
    },
  };
}

const rows = [];
const results = [];
console.log(`CPU time per step, ${machineLine()} at the start`);
for (const steps of SIZES) {
  for (const [shape, plan] of Object.entries(shapes(steps))) {
    const graph = buildGraph(plan, async () => undefined, savers.MemorySaver());
    const contenders = { 'LangGraph MemorySaver': () => invoke(graph, plan, 16) };
    for (const { label, packages } of checkouts) {
      for (const [name, run] of Object.entries(oursOf(packages))) contenders[`${name} @${label}`] = () => run(plan);
    }
    const samples = await interleave(contenders, { rounds: ROUNDS, warmUp: WARM_UP });
    const cpu = (name) => (median(samples[name].cpuMs) * 1000) / steps;
    const peer = cpu('LangGraph MemorySaver');
    const after = checkouts.at(-1).label;
    for (const name of Object.keys(oursOf(checkouts[0].packages))) {
      const row = {
        shape,
        steps,
        contender: `stepwise ${name}`,
        [`CPU µs/step @${after}`]: cpu(`${name} @${after}`).toFixed(1),
      };
      row['vs LangGraph'] = (cpu(`${name} @${after}`) / peer).toFixed(3);
      if (checkouts.length === 2) {
        const before = checkouts[0].label;
        row[`@${before}`] = cpu(`${name} @${before}`).toFixed(1);
        row[`${after} / ${before}`] = (cpu(`${name} @${after}`) / cpu(`${name} @${before}`)).toFixed(3);
      }
      rows.push(row);
    }
    rows.push({ shape, steps, contender: 'LangGraph MemorySaver', [`CPU µs/step @${after}`]: peer.toFixed(1) });
    results.push({
      shape,
      steps,
      cpuMsPerRun: Object.fromEntries(Object.keys(samples).map((n) => [n, median(samples[n].cpuMs)])),
    });
  }
}
rmSync(directory, { recursive: true, force: true });
console.log(`median of ${ROUNDS} interleaved rounds after ${WARM_UP} warm-up rounds; ${machineLine()} at the end`);
console.table(rows);
writeResults(checkouts.length === 2 ? 'cpu-per-step-before-after' : 'cpu-per-step', { sizes: SIZES, rows, results });
