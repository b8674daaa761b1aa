// What Stepwise adds to an MCP tool call: the same server (@modelcontextprotocol/server-memory,
// `read_graph` on an empty graph) called N times with the raw SDK client, through the step kernel
// (schema validation + journal into a MemoryStore), and as an N-step plan on the dag engine.
// Every contender is connected and warmed up first; then ROUNDS rounds run the four contenders
// interleaved (the order rotates each round) and each line is the median of its rounds.
// Protocol (bench/README.md): gc() before each timed run, the load average printed; what it prints
// is written to bench/results/call-overhead.json for the README.
//
//   CALLS=300 node bench/tools-mcp/call-overhead.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MemoryStore, ToolRegistry } from '@stepwise/core';
import { finishRun, invokeStep, startRun } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { mcpTools } from '@stepwise/tools-mcp';
import { machineLine, median, requireGc, timed, writeResults } from '../_protocol.mjs';

requireGc();

const require = createRequire(import.meta.url);
const calls = Number(process.env.CALLS ?? 300);
const ROUNDS = 3;
const concurrency = 8;
const directory = mkdtempSync(join(tmpdir(), 'stepwise-mcp-bench-'));
const server = {
  command: process.execPath,
  args: [require.resolve('@modelcontextprotocol/server-memory/dist/index.js')],
  env: { MEMORY_FILE_PATH: join(directory, 'memory.jsonl') },
};

const plan = makePlan(Array.from({ length: calls }, (_, index) => ({ id: `s${index}`, tool: 'read_graph', args: {} })));

try {
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(new StdioClientTransport({ ...server, stderr: 'ignore' }));
  const registry = new ToolRegistry();
  await registry.use(await mcpTools(server));
  let runs = 0;

  /** The four contenders, each running `calls` calls; the raw SDK ones are the references. */
  const contenders = {
    'raw SDK, sequential': async () => {
      for (let index = 0; index < calls; index++) await client.callTool({ name: 'read_graph', arguments: {} });
    },
    'step kernel (invokeStep), sequential': async () => {
      const store = new MemoryStore();
      const runId = `bench-kernel-${runs++}`;
      const journal = await startRun({ store, runId, plan, engine: 'bench' });
      const context = { runId, journal, registry };
      for (const step of plan.steps) {
        const result = await invokeStep(step, { attempt: 1, references: 'literal' }, context);
        if (result.status !== 'succeeded') throw new Error(JSON.stringify(result.error));
      }
      await finishRun(journal, { plan, engine: 'bench', status: 'completed', steps: [], durationMs: 0 });
    },
    [`raw SDK, ${concurrency} at a time`]: async () => {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < calls) await client.callTool({ name: 'read_graph', arguments: {} });
        }),
      );
    },
    [`dag engine plan, ${concurrency} at a time`]: async () => {
      const result = await dagEngine({ tools: registry, store: new MemoryStore(), concurrency }).run(plan).result;
      if (result.status !== 'completed') throw new Error(`run ${result.status}`);
    },
  };
  const names = Object.keys(contenders);
  for (const name of names) await contenders[name](); // warm-up
  const samples = new Map(names.map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let offset = 0; offset < names.length; offset++) {
      const name = names[(round + offset) % names.length];
      samples.get(name).push((await timed(contenders[name])).ms);
    }
  }
  await client.close();
  await registry.dispose();

  const perCall = (name) => median(samples.get(name)) / calls;
  console.log(
    `MCP call overhead, ${calls} calls of server-memory read_graph (stdio, one server process per client; load average ${loadavg()[0].toFixed(1)}; median of ${ROUNDS} interleaved rounds after a warm-up)`,
  );
  const rows = [];
  for (const [name, reference] of [
    [names[0], names[0]],
    [names[1], names[0]],
    [names[2], names[2]],
    [names[3], names[2]],
  ]) {
    const versus = name === reference ? undefined : (perCall(name) / perCall(reference)).toFixed(2);
    console.log(
      `  ${name.padEnd(40)} ${perCall(name).toFixed(3)} ms/call${versus ? `  ×${versus} vs ${reference}` : ''}`,
    );
    rows.push({ contender: name, msPerCall: perCall(name).toFixed(3), versus, reference });
  }
  console.log(`${machineLine()} at the end`);
  writeResults('call-overhead', { calls, rounds: ROUNDS, concurrency, rows });
} finally {
  rmSync(directory, { recursive: true, force: true });
}
