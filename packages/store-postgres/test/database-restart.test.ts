// A run goes on through a Postgres restart: the batch the stopped server could not take is asked
// about and appended again once it is back, so the run neither fails over nor leaves a call in flight
// for a resume to fail (E309) although its tool never started.
import { defineTool, readAll, ToolRegistry, verifyJournal } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { until } from './worker-processes.js';

const postgres = await testPostgres();
// Restarting needs a server of this test's own.
const server = postgres?.server;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!server)('a Postgres restart in the middle of a run', () => {
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    server?.close();
  });

  it('completes the run: the result the stopped server missed is appended once it is back, every tool runs once', async () => {
    const store = createPostgresStore({ connectionString: postgres?.url as string, schema: `restart_${process.pid}` });
    stores.push(store);
    await store.ready;
    const calls: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tools = new ToolRegistry([
      defineTool({
        name: 'send',
        description: 'Sends once: not idempotent.',
        input: { type: 'object' },
        effect: 'write',
        execute: async (_input, context) => {
          calls.push(context.stepId);
          if (context.stepId === 'first') await held;
          return { sent: context.stepId };
        },
      }),
    ]);
    const plan = makePlan([
      { id: 'first', tool: 'send', args: {} },
      { id: 'second', tool: 'send', args: {}, dependsOn: ['first'] },
    ]);
    const handle = dagEngine({ tools, store, leaseTtlMs: 20_000 }).run(plan, { runId: 'run_restarted' });
    await until(() => (calls.length === 1 ? true : undefined), 10_000, 'the first tool to start');
    // The server stops while the first tool runs: its result cannot be appended, nor asked about.
    server?.stop();
    release();
    await sleep(800);
    server?.start();
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(calls).toEqual(['first', 'second']);
    const events = await readAll(store, 'run_restarted');
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.filter((event) => event.type === 'tool-call').map((event) => event.stepId)).toEqual([
      'first',
      'second',
    ]);
    expect(events.some((event) => event.type === 'run-resume')).toBe(false);
    expect(verifyJournal('run_restarted', events)).toMatchObject({ ok: true });
  }, 60_000);
});
