import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { defineTool, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';

const size = 100000;
let n = 0;
let file;
const tools = new ToolRegistry([
  defineTool({
    name: 'noop',
    description: 'n',
    input: { type: 'object' },
    effect: 'read',
    execute: () => {
      if (++n === size * 0.8) {
        globalThis.gc();
        file = writeHeapSnapshot('/tmp/heap.heapsnapshot');
      }
      return { ok: true };
    },
  }),
]);
const steps = [];
for (let i = 0; i < size; i++)
  steps.push({ id: `s${i}`, tool: 'noop', args: {}, ...(i ? { dependsOn: [`s${i - 1}`] } : {}) });
const store = createSqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'h-')), 'r.db'), synchronous: 'NORMAL' });
const r = await dagEngine({ tools, store }).run({ id: 'p', version: 1, goal: 'g', steps }).result;
console.log(r.status, file, process.memoryUsage().rss / 2 ** 20);
