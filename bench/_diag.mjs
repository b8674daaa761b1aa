import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, ToolRegistry } from '@stepwise/core';
import { chainPlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
const tools = new ToolRegistry([defineTool({ name: 'noop', description: 'n', input: { type: 'object' }, effect: 'read', execute: () => ({}) })]);
const dir = mkdtempSync(join(tmpdir(), 'd-'));
const N = Number(process.argv[2] ?? 2000);
for (let r = 0; r < 5; r++) {
  const store = createSqliteStore({ path: process.env.X_MEM ? ':memory:' : join(dir, `${r}.db`), synchronous: 'NORMAL' });
  await store.ready;
  let appends = 0, events = 0, appendNs = 0n;
  const orig = store.append.bind(store);
  store.append = async (...a) => { appends++; events += a[1].length; const t = process.hrtime.bigint(); try { return await orig(...a); } finally { appendNs += process.hrtime.bigint() - t; } };
  const plan = chainPlan(N, 'noop');
  const p = { ...plan, steps: plan.steps.map((s) => ({ ...s, args: {} })) };
  const engine = dagEngine({ tools, store, concurrency: 16 });
  const t = performance.now();
  const res = await engine.run(p).result;
  const ms = performance.now() - t;
  console.log(res.status, ((ms * 1000) / N).toFixed(1), 'µs/step', appends, 'appends', events, 'events', (Number(appendNs) / 1000 / N).toFixed(1), 'µs append/step');
  await store.close();
}
