// The fixed cost of one run: a one-step plan of a no-op tool on MemoryStore, run to its result,
// many times over one engine and one store (as a host does), under each engine; beside the same
// one-node graph in LangGraph.js (MemorySaver, a new thread per run) and a one-step Mastra
// workflow (a new run per run), in the same process, warmed up, interleaved round by round.
// Where peers are favoured: LangGraph's compile and Mastra's workflow build happen once, outside
// the timing; ours includes plan validation, the run lease and the run-start/run-end journal.
//
//   node bench/engine-dag/fixed-cost.mjs [runs per round = 500]
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { approvePlan, defineTool, MemoryStore, ToolRegistry } from '@stepwise/core';
import { agenticEngine } from '@stepwise/engine-agentic';
import { scriptedModel } from '@stepwise/engine-agentic/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { sequentialEngine } from '@stepwise/engine-sequential';
import { buildGraph, invoke, savers } from './_langgraph.mjs';

const RUNS = Number(process.argv[2] ?? 500);
const ROUNDS = 5;
const TARGET_MS = 1;
const require = createRequire(import.meta.url);
const mastraVersion = require('@mastra/core/package.json').version;
const { createStep, createWorkflow } = await import('@mastra/core/workflows');
const { z } = await import('zod');

const tools = new ToolRegistry([
  defineTool({ name: 'noop', description: 'nothing', input: { type: 'object' }, effect: 'read', execute: () => ({}) }),
]);
const plan = { id: 'one', version: 1, goal: 'fixed cost', steps: [{ id: 'only', tool: 'noop', args: {} }] };

function stepwise(engine) {
  return async () => {
    const result = await engine.run(plan).result;
    if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  };
}

const approved = approvePlan(plan, { by: 'bench' });
const sequential = sequentialEngine({ tools, store: new MemoryStore() });
const graph = buildGraph(plan, async () => undefined, savers.MemorySaver());
const any = z.any();
const workflow = createWorkflow({ id: 'fixed_cost', inputSchema: any, outputSchema: any })
  .then(createStep({ id: 'only', inputSchema: any, outputSchema: any, execute: async () => ({}) }))
  .commit();

const contenders = {
  'stepwise dag': stepwise(dagEngine({ tools, store: new MemoryStore() })),
  'stepwise sequential': async () => {
    const result = await sequential.run(plan, { authorization: approved }).result;
    if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  },
  'stepwise agentic (tool step, no model call)': stepwise(
    // A tool step never calls the model: the model is only there because the engine needs one.
    agenticEngine({ tools, store: new MemoryStore(), model: scriptedModel([]) }),
  ),
  'LangGraph MemorySaver': () => invoke(graph, plan),
  [`Mastra ${mastraVersion}`]: async () => {
    const run = await workflow.createRunAsync();
    const result = await run.start({ inputData: {} });
    if (result.status !== 'success') throw new Error(`mastra run ended ${result.status}`);
  },
};

async function timeRuns(contender, runs) {
  const started = performance.now();
  for (let index = 0; index < runs; index++) await contender();
  return (performance.now() - started) / runs;
}

const loadAtStart = loadavg()[0];
for (const contender of Object.values(contenders)) await timeRuns(contender, Math.min(RUNS, 200));
const samples = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, contender] of Object.entries(contenders)) {
    globalThis.gc?.();
    samples[name].push(await timeRuns(contender, RUNS));
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const langgraphMs = median(samples['LangGraph MemorySaver']);
const mastraMs = median(samples[`Mastra ${mastraVersion}`]);
console.log(
  `Fixed cost of a one-step run on the memory store (node ${process.version}, load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end; median of ${ROUNDS} interleaved rounds of ${RUNS} runs after a warm-up)`,
);
console.log(`target: < ${TARGET_MS} ms per run for every Stepwise engine\n`);
console.table(
  Object.keys(contenders).map((name) => {
    const ms = median(samples[name]);
    const ours = name.startsWith('stepwise');
    return {
      contender: name,
      'ms/run': ms.toFixed(3),
      'vs LangGraph': (ms / langgraphMs).toFixed(3),
      [`vs Mastra`]: (ms / mastraMs).toFixed(3),
      target: ours ? (ms < TARGET_MS ? 'MET' : 'MISSED') : '',
    };
  }),
);
