import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, type Plan, ToolRegistry } from '@stepwise/core';
import type { Lease } from '@stepwise/core/store';
import { chainPlan, makePlan } from '@stepwise/core/testing';
import { createSqliteStore, type SqliteStore } from '@stepwise/store-sqlite';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { dagEngine } from '../src/index.js';

// Tools that return at once, on better-sqlite3 (synchronous): every await in the run resolves as a
// promise callback, so without the scheduler's turns no timer or I/O callback runs until the end.
const tools = new ToolRegistry([
  defineTool({
    name: 'quick',
    description: 'returns at once',
    input: { type: 'object' },
    effect: 'read',
    execute: () => ({ ok: true }),
  }),
]);

function fanOut(width: number): Plan {
  const middle = Array.from({ length: width }, (_, index) => ({ id: `m${index}`, tool: 'quick', dependsOn: ['root'] }));
  return makePlan([
    { id: 'root', tool: 'quick' },
    ...middle,
    { id: 'join', tool: 'quick', dependsOn: middle.map((step) => step.id) },
  ]);
}

let directory: string;
let store: SqliteStore;
beforeEach(async () => {
  directory = mkdtempSync(join(tmpdir(), 'stepwise-turns-'));
  store = createSqliteStore({ path: join(directory, 'runs.db') });
  await store.ready;
});
afterEach(async () => {
  vi.useRealTimers();
  await store.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('a run of steps that never wait', () => {
  it.each([
    ['a fan-out', () => fanOut(6000)],
    ['a chain', () => chainPlan(3000, 'quick')],
  ])('lets timers run while %s runs on SQLite', async (_shape, plan) => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = process.cpuUsage();
    const result = await dagEngine({ tools, store }).run(plan()).result;
    const used = process.cpuUsage(started);
    clearInterval(timer);
    expect(result.status).toBe('completed');
    // Turns come every 10 ms of work (a step in progress is not cut short): well over one per 50 ms.
    // Work is the CPU time the process got: on a loaded machine wall time also counts the time the
    // process waited for a core, when neither its steps nor its timers could run.
    const worked = (used.user + used.system) / 1000;
    expect(worked).toBeGreaterThan(150);
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(worked / 50));
  });

  it('keeps its lease renewed while it works for longer than the lease lasts', async () => {
    const renewals: Lease[] = [];
    const renew = store.renewLease.bind(store);
    store.renewLease = async (lease) => {
      const renewed = await renew(lease);
      renewals.push(renewed);
      return renewed;
    };
    // A lease not renewed within its TTL counts as lost (the run stops), so the TTL must outlast the
    // longest stall of a loaded machine; a chain of steps that each keep the thread busy for a
    // millisecond works for at least twice that, however fast the machine.
    const ttlMs = 600;
    const spinning = new ToolRegistry([
      defineTool({
        name: 'spin',
        description: 'keeps the thread busy for a millisecond',
        input: { type: 'object' },
        effect: 'read',
        execute: () => {
          const until = performance.now() + 1;
          while (performance.now() < until) {
            // Busy on purpose: a step that never waits.
          }
          return { ok: true };
        },
      }),
    ]);
    const started = Date.now();
    const handle = dagEngine({ tools: spinning, store, leaseTtlMs: ttlMs }).run(chainPlan(2 * ttlMs, 'spin'));
    const result = await handle.result;
    const elapsed = Date.now() - started;
    expect(result.status).toBe('completed');
    expect(elapsed).toBeGreaterThan(2 * ttlMs);
    // Renewed every third of the TTL: the lease never lapsed while the run held it.
    expect(renewals.length).toBeGreaterThanOrEqual(Math.floor(elapsed / ttlMs));
    const expiries = renewals.map((lease) => Date.parse(lease.expiresAt));
    for (let index = 1; index < expiries.length; index++) {
      expect(expiries[index] as number).toBeGreaterThan(expiries[index - 1] as number);
    }
  });

  it('does not wait for a host that fakes timers', async () => {
    // The clock (performance.now) stays real, so the run does take its turns.
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date'],
    });
    const result = await dagEngine({ tools, store }).run(fanOut(3000)).result;
    expect(result.status).toBe('completed');
    expect(result.steps).toHaveLength(3002);
  });
});
