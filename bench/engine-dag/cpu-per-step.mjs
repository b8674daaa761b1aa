// CPU time per step (user + system, this process), the figure a loaded machine distorts least:
// wall-clock µs/step swings 2× with other processes on the cores, CPU time far less. A no-op
// chain and a 1 → N → 1 fan-out on MemoryStore under the sequential and dag engines, beside the
// same graph in LangGraph.js (MemorySaver; compiled outside the timing, which favours it).
// Median of 7 interleaved rounds after two warm-up rounds. LangGraph's garbage is collected in
// whichever run comes next, so its share of GC lands partly on ours: that favours LangGraph.
//
//   node --expose-gc bench/engine-dag/cpu-per-step.mjs [steps = 1000]
import { setMaxListeners } from 'node:events';
import { loadavg } from 'node:os';
import { approvePlan, defineTool, MemoryStore, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { sequentialEngine } from '@stepwise/engine-sequential';
import { buildGraph, invoke, savers } from './_langgraph.mjs';

// LangGraph adds an abort listener per node to one signal.
setMaxListeners(0);
process.removeAllListeners('warning');

const STEPS = Number(process.argv[2] ?? 1000);
const ROUNDS = 7;
const WARM_UP = 2;
const tools = new ToolRegistry([
  defineTool({ name: 'noop', description: 'nothing', input: { type: 'object' }, effect: 'read', execute: () => ({}) }),
]);
const ids = Array.from({ length: STEPS - 2 }, (_, index) => `m${index}`);
const plans = {
  chain: {
    id: 'chain',
    version: 1,
    goal: 'cpu',
    steps: Array.from({ length: STEPS }, (_, index) => ({
      id: `s${index}`,
      tool: 'noop',
      args: {},
      ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
    })),
  },
  'fan-out': {
    id: 'fan',
    version: 1,
    goal: 'cpu',
    steps: [
      { id: 'root', tool: 'noop', args: {} },
      ...ids.map((id) => ({ id, tool: 'noop', args: {}, dependsOn: ['root'] })),
      { id: 'join', tool: 'noop', args: {}, dependsOn: ids },
    ],
  },
};

async function completed(handle) {
  const result = await handle.result;
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
}

const contenders = {
  'stepwise sequential': (plan) =>
    completed(
      sequentialEngine({ tools, store: new MemoryStore() }).run(plan, {
        authorization: approvePlan(plan, { by: 'bench' }),
      }),
    ),
  'stepwise dag': (plan) => completed(dagEngine({ tools, store: new MemoryStore() }).run(plan)),
};

async function cpuPerStep(work) {
  globalThis.gc?.();
  const before = process.cpuUsage();
  await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / STEPS;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const loadAtStart = loadavg()[0];
const rows = [];
for (const [shape, plan] of Object.entries(plans)) {
  const graph = buildGraph(plan, async () => undefined, savers.MemorySaver());
  const all = { ...contenders, 'LangGraph MemorySaver': () => invoke(graph, plan, 16) };
  const samples = Object.fromEntries(Object.keys(all).map((name) => [name, []]));
  for (let round = 0; round < WARM_UP + ROUNDS; round++) {
    for (const [name, work] of Object.entries(all)) {
      const cpu = await cpuPerStep(() => work(plan));
      if (round >= WARM_UP) samples[name].push(cpu);
    }
  }
  const peer = median(samples['LangGraph MemorySaver']);
  for (const name of Object.keys(all)) {
    const cpu = median(samples[name]);
    rows.push({
      shape,
      steps: STEPS,
      contender: name,
      'CPU µs/step': cpu.toFixed(1),
      'vs LangGraph': (cpu / peer).toFixed(3),
    });
  }
}
console.log(
  `CPU time per step on MemoryStore (node ${process.version}, load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end; median of ${ROUNDS} interleaved rounds after ${WARM_UP} warm-up rounds)`,
);
console.table(rows);
