import { defineTool, MemoryStore, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';

const tools = new ToolRegistry([
  defineTool({ name: 'noop', description: 'nothing', input: { type: 'object' }, effect: 'read', execute: () => ({}) }),
]);
const plan = { id: 'one', version: 1, goal: 'fixed cost', steps: [{ id: 'only', tool: 'noop', args: {} }] };
const engine = dagEngine({ tools, store: new MemoryStore() });
const N = Number(process.argv[2] ?? 2000);
for (let i = 0; i < 200; i++) await engine.run(plan).result;
const t = performance.now();
const c = process.cpuUsage();
for (let i = 0; i < N; i++) await engine.run(plan).result;
const cpu = process.cpuUsage(c);
console.log('ms/run', (performance.now() - t) / N, 'cpu ms/run', (cpu.user + cpu.system) / 1000 / N);
