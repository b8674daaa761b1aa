// @stepwise/engine-agentic: engine overhead per model turn and memory per goal step, with a
// scripted model (no network, no thinking time) and a no-op tool, so everything measured is
// the engine: windowing, token counting, the kernel's callTool, journaling, the scheduler.
// Peers measured in the same run:
//  - a bare loop: the same model and tool called directly, messages appended, nothing journaled
//    (the floor: what any agent loop costs);
//  - LangGraph.js: a ReAct-style StateGraph (agent node → ToolNode → agent …) with MemorySaver.
// Target: < 1 ms engine overhead per turn (MemoryStore).
// Protocol (bench/README.md, `interleave`): gc() before each timed run, a warm-up run of each
// contender, ROUNDS (default 5) rounds in one order and then its reverse, medians; each contender's
// engine or graph is made untimed before each run. The load average is printed; what it prints is
// written to bench/results/turn-overhead.json for the README.
//
//   node --expose-gc bench/engine-agentic/turn-overhead.mjs [steps=200] [turnsPerStep=10]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { defineTool, MemoryStore, readAll, ToolRegistry } from '@stepwise/core';
import { agenticEngine, heuristicEstimator, loadTokenEstimator } from '@stepwise/engine-agentic';
import { scriptedModel } from '@stepwise/engine-agentic/testing';
import { z } from 'zod';
import { interleave, machineLine, median, requireGc, writeResults } from '../_protocol.mjs';

requireGc();

const steps = Number(process.argv[2] ?? 200);
const turnsPerStep = Number(process.argv[3] ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const turns = steps * (turnsPerStep + 1); // tool turns plus the completing turn, per step

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  input: z.object({ index: z.number() }),
  effect: 'read',
  execute: (input) => ({ ok: true, index: input.index }),
});

/** Each step: `turnsPerStep` turns calling noop, then complete_step. Usage reported, as real endpoints do. */
function script() {
  let inStep = 0;
  return ({ call }) => {
    const usage = { promptTokens: 200, completionTokens: 20, totalTokens: 220 };
    if (inStep === turnsPerStep) {
      inStep = 0;
      return { toolCalls: [{ name: 'complete_step', arguments: { summary: 'done' } }], usage };
    }
    inStep++;
    return { toolCalls: [{ name: 'noop', arguments: { index: call } }], usage };
  };
}

function plan(count) {
  return {
    id: `agentic_${count}`,
    goal: 'benchmark the loop',
    steps: Array.from({ length: count }, (_, index) => ({
      id: `s${index}`,
      description: `step ${index}: call noop ${turnsPerStep} times, then complete`,
      ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
    })),
  };
}

let runs = 0;

/** Our contender: the engine and its store made untimed before each run (`setup`), the run timed. */
function stepwise(estimator, storeFactory = () => new MemoryStore()) {
  let open;
  return {
    setup: async () => {
      await open?.close();
      open = storeFactory();
      const engine = agenticEngine({
        model: scriptedModel(script()),
        tools: new ToolRegistry([noop]),
        store: open,
        tokenEstimator: estimator,
        limits: { maxTurns: turnsPerStep + 5, maxConsecutiveToolCalls: turnsPerStep + 5 },
      });
      return { engine, store: open };
    },
    run: async ({ engine }) => {
      const result = await engine.run(plan(steps), { runId: `run_${runs++}` }).result;
      if (result.status !== 'completed') throw new Error(`run ${result.status}`);
    },
    /** Events one run journals, counted on a run of its own. */
    events: async () => {
      const { engine, store } = await stepwise(estimator, storeFactory).setup();
      const result = await engine.run(plan(steps), { runId: `run_${runs++}` }).result;
      const count = (await readAll(store, result.runId)).length;
      await store.close();
      return count;
    },
    close: () => open?.close(),
  };
}

const bareLoop = {
  setup: () => scriptedModel(script()),
  run: async (model) => {
    for (let step = 0; step < steps; step++) {
      const messages = [
        { role: 'system', content: 'system' },
        { role: 'user', content: `step ${step}` },
      ];
      for (;;) {
        const response = await model.generate({ messages, tools: [], toolChoice: 'auto', signal: AbortSignal.abort() });
        messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
        const call = response.toolCalls[0];
        if (call.name === 'complete_step') break;
        const output = await noop.execute(call.arguments, {});
        messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: JSON.stringify(output) });
      }
    }
  },
};

/** The graph is compiled untimed before each run, as Stepwise's engine is made (`setup`). */
const langGraph = {
  setup: () => {
    const noopTool = langchainTool(async ({ index }) => JSON.stringify({ ok: true, index }), {
      name: 'noop',
      description: 'Does nothing.',
      schema: z.object({ index: z.number() }),
    });
    let counter = 0;
    return new StateGraph(MessagesAnnotation)
      .addNode('agent', async (state) => {
        const toolTurns = state.messages.filter((message) => message.getType() === 'tool').length;
        if (toolTurns >= turnsPerStep) return { messages: [new AIMessage('done')] };
        return {
          messages: [
            new AIMessage({
              content: '',
              tool_calls: [{ id: `c${counter++}`, name: 'noop', args: { index: counter } }],
            }),
          ],
        };
      })
      .addNode('tools', new ToolNode([noopTool]))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', (state) => (state.messages.at(-1).tool_calls?.length ? 'tools' : END))
      .addEdge('tools', 'agent')
      .compile({ checkpointer: new MemorySaver() });
  },
  run: async (graph) => {
    for (let step = 0; step < steps; step++) {
      await graph.invoke(
        { messages: [{ role: 'user', content: `step ${step}` }] },
        { configurable: { thread_id: `t${runs}_${step}` }, recursionLimit: turnsPerStep * 2 + 10 },
      );
    }
    runs++;
  },
};

async function sqliteStore() {
  try {
    const { createSqliteStore } = await import('@stepwise/store-sqlite');
    const directory = mkdtempSync(join(tmpdir(), 'bench-agentic-'));
    return {
      factory: () => createSqliteStore({ path: join(directory, 'runs.db') }),
      cleanup: () => rmSync(directory, { recursive: true, force: true }),
    };
  } catch {
    return undefined;
  }
}

function gc() {
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    globalThis.gc();
  }
}

/** Heap retained per goal step once the run ended, the MemoryStore journal included. */
async function memoryPerStep(count) {
  const store = new MemoryStore();
  const engine = agenticEngine({
    model: scriptedModel(script()),
    tools: new ToolRegistry([noop]),
    store,
    tokenEstimator: heuristicEstimator,
    limits: { maxTurns: turnsPerStep + 5, maxConsecutiveToolCalls: turnsPerStep + 5 },
  });
  gc();
  const before = process.memoryUsage().heapUsed;
  const result = await engine.run(plan(count), { runId: 'run_memory' }).result;
  gc();
  const after = process.memoryUsage().heapUsed;
  const events = await readAll(store, result.runId);
  const journalBytes = Buffer.byteLength(events.map((event) => JSON.stringify(event)).join('\n'));
  return { retainedPerStep: (after - before) / count, journalBytesPerStep: journalBytes / count, store };
}

const format = (ms) => `${ms.toFixed(3)} ms`;

console.log(`${machineLine()} at the start`);
const tokenizer = await loadTokenEstimator();
const sqlite = await sqliteStore();
const ours = {
  'stepwise, MemoryStore, heuristic estimator': stepwise(heuristicEstimator),
  'stepwise, MemoryStore, gpt-tokenizer': stepwise(tokenizer),
  ...(sqlite ? { 'stepwise, SQLite store, gpt-tokenizer': stepwise(tokenizer, sqlite.factory) } : {}),
};
const contenders = { 'bare loop (no journal)': bareLoop, ...ours, 'LangGraph ReAct graph + MemorySaver': langGraph };
const samples = await interleave(contenders, { rounds: ROUNDS, warmUp: 1 });
const results = [];
for (const [label, contender] of Object.entries(contenders)) {
  const elapsed = median(samples[label].ms);
  const events = contender.events ? await contender.events() : undefined;
  await contender.close?.();
  results.push({
    label,
    elapsed,
    perTurnMs: elapsed / turns,
    cpuPerTurnMs: median(samples[label].cpuMs) / turns,
    events,
  });
}
sqlite?.cleanup();

console.log(`agentic engine: ${steps} goal steps × ${turnsPerStep + 1} turns = ${turns} model turns, no-op tool`);
const floor = results[0].perTurnMs;
const reference = results[1].perTurnMs;
for (const result of results) {
  const overhead = result.perTurnMs - floor;
  console.log(
    `  ${result.label.padEnd(44)} ${format(result.perTurnMs)}/turn` +
      `  overhead over the bare loop ${format(Math.max(0, overhead))}/turn` +
      `  ×${(result.perTurnMs / reference).toFixed(2)} vs stepwise (MemoryStore)` +
      (result.events ? `  ${result.events} events` : ''),
  );
}
const target = results[1].perTurnMs - floor;
console.log(
  `  target < 1 ms engine overhead per turn (MemoryStore): ${target < 1 ? 'met' : 'MISSED'} (${format(target)})`,
);

const memory = await memoryPerStep(Math.min(steps, 200));
console.log(
  `memory: ${(memory.retainedPerStep / 1024).toFixed(1)} KiB heap retained per goal step of ${turnsPerStep + 1} turns` +
    ` (journal in MemoryStore included; ${(memory.journalBytesPerStep / 1024).toFixed(1)} KiB of journal JSON per step)` +
    (typeof globalThis.gc === 'function' ? '' : '  [run with --expose-gc for stable numbers]'),
);
console.log(`${machineLine()} at the end`);
writeResults('turn-overhead', {
  rounds: ROUNDS,
  steps,
  turnsPerStep,
  turns,
  rows: results.map((result) => ({
    label: result.label,
    perTurn: format(result.perTurnMs),
    overhead: format(Math.max(0, result.perTurnMs - floor)),
    versusStepwise: (result.perTurnMs / reference).toFixed(2),
    events: result.events,
  })),
  target: { overhead: format(target), met: target < 1 },
  memory: {
    retainedKiB: (memory.retainedPerStep / 1024).toFixed(1),
    journalKiB: (memory.journalBytesPerStep / 1024).toFixed(1),
  },
});
