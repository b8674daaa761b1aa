import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
const tools = new ToolRegistry([defineTool({ name: 'noop', description: 'n', input: { type: 'object' }, effect: 'read', execute: () => ({ ok: true }) })]);
function plan(size) {
  const steps = [{ id: 'root', tool: 'noop', args: {} }];
  for (let i = 0; i < size - 2; i++) steps.push({ id: `s${i}`, tool: 'noop', args: {}, dependsOn: ['root'] });
  steps.push({ id: 'join', tool: 'noop', args: {}, dependsOn: steps.slice(1).map((s) => s.id) });
  return { id: 'f', version: 1, goal: 'scale', steps };
}
const mb = (x) => (x / 2 ** 20).toFixed(0);
const dir = mkdtempSync(join(tmpdir(), 'm-'));
const store = createSqliteStore({ path: join(dir, 'a.db'), synchronous: 'NORMAL' });
await store.ready;
gc();
const m0 = process.memoryUsage();
console.log('start rss', mb(m0.rss), 'heap', mb(m0.heapUsed));
let peak = 0, peakHeap = 0;
const t = setInterval(() => { const m = process.memoryUsage(); peak = Math.max(peak, m.rss); peakHeap = Math.max(peakHeap, m.heapUsed); }, 10);
const result = await dagEngine({ tools, store }).run(plan(100000)).result;
clearInterval(t);
const m1 = process.memoryUsage();
console.log('end rss', mb(m1.rss), 'heap', mb(m1.heapUsed), 'peak rss', mb(peak), 'peak heap', mb(peakHeap), 'ext', mb(m1.external), 'ab', mb(m1.arrayBuffers));
gc();
const m2 = process.memoryUsage();
console.log('after gc rss', mb(m2.rss), 'heap', mb(m2.heapUsed), result.steps.length);
