// What Stepwise adds to an MCP tool call: the same server (@modelcontextprotocol/server-memory,
// `read_graph` on an empty graph) called N times with the raw SDK client, through the step kernel
// (schema validation + journal into a MemoryStore), and as an N-step plan on the dag engine.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { finishRun, invokeStep, MemoryStore, startRun, ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { mcpTools } from '@stepwise/tools-mcp';

const require = createRequire(import.meta.url);
const calls = Number(process.env.CALLS ?? 300);
const concurrency = 8;
const directory = mkdtempSync(join(tmpdir(), 'stepwise-mcp-bench-'));
const server = {
  command: process.execPath,
  args: [require.resolve('@modelcontextprotocol/server-memory/dist/index.js')],
  env: { MEMORY_FILE_PATH: join(directory, 'memory.jsonl') },
};

async function timed(label, work) {
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  return { label, ms, perCall: ms / calls };
}

async function rawSdk() {
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(new StdioClientTransport({ ...server, stderr: 'ignore' }));
  await client.callTool({ name: 'read_graph', arguments: {} }); // warm-up
  const sequential = await timed('raw SDK, sequential', async () => {
    for (let index = 0; index < calls; index++) await client.callTool({ name: 'read_graph', arguments: {} });
  });
  const parallel = await timed(`raw SDK, ${concurrency} at a time`, async () => {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < calls) await client.callTool({ name: 'read_graph', arguments: {} });
      }),
    );
  });
  await client.close();
  return [sequential, parallel];
}

async function stepwise() {
  const registry = new ToolRegistry();
  await registry.use(await mcpTools(server));
  const store = new MemoryStore();
  const plan = makePlan(
    Array.from({ length: calls }, (_, index) => ({ id: `s${index}`, tool: 'read_graph', args: {} })),
  );
  const journal = await startRun({ store, runId: 'bench-kernel', plan, engine: 'bench' });
  const context = { runId: 'bench-kernel', journal, registry };
  await invokeStep({ id: 'warm', tool: 'read_graph', args: {} }, { attempt: 1, references: 'literal' }, context);
  const kernel = await timed('step kernel (invokeStep), sequential', async () => {
    for (const step of plan.steps) {
      const result = await invokeStep(step, { attempt: 1, references: 'literal' }, context);
      if (result.status !== 'succeeded') throw new Error(JSON.stringify(result.error));
    }
  });
  await finishRun(journal, { plan, engine: 'bench', status: 'completed', steps: [], durationMs: 0 });
  const engine = dagEngine({ tools: registry, store: new MemoryStore(), concurrency });
  const dag = await timed(`dag engine plan, ${concurrency} at a time`, async () => {
    const result = await engine.run(plan).result;
    if (result.status !== 'completed') throw new Error(`run ${result.status}`);
  });
  await registry.dispose();
  return [kernel, dag];
}

try {
  const [sequential, parallel] = await rawSdk();
  const [kernel, dag] = await stepwise();
  console.log(`MCP call overhead, ${calls} calls of server-memory read_graph (stdio, one server process)`);
  for (const [row, peer] of [
    [sequential, sequential],
    [kernel, sequential],
    [parallel, parallel],
    [dag, parallel],
  ]) {
    const ratio = row === peer ? '' : `  ×${(row.ms / peer.ms).toFixed(2)} vs ${peer.label}`;
    console.log(`  ${row.label.padEnd(40)} ${row.perCall.toFixed(3)} ms/call${ratio}`);
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
