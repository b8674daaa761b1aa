import { defineTool, ToolRegistry } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { enqueue, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { workerHarness } from './worker-harness.js';
import { chainOf, query } from './worker-processes.js';

const postgres = await testPostgres();
let schemas = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const registry = new ToolRegistry([
  defineTool({
    name: 'work',
    description: 'does nothing',
    input: { type: 'object', properties: { sleepMs: { type: 'number' } } },
    effect: 'read',
    idempotent: true,
    execute: async (args: { sleepMs?: number }) => {
      await sleep(args.sleepMs ?? 0);
      return { ok: true };
    },
  }),
]);

describe.skipIf(!postgres)('workers listening for news of their queue', () => {
  const harness = workerHarness(postgres);
  const url = harness.url;

  async function setUp(notify: boolean, concurrency = 4, pollIntervalMs = 20) {
    const schema = `notify_${process.pid}_${schemas++}`;
    const client = await harness.store(schema);
    // A long lease: the look for what no one announces comes 5 s apart (a quarter of it).
    const { counts, worker } = await harness.countingWorker(
      schema,
      { claims: /update "[a-z_0-9]+"\."work_queue" w\s+set state = 'claimed'/ },
      { tools: registry, leaseTtlMs: 20_000, pollIntervalMs, notify, concurrency },
    );
    return { client, counts, worker };
  }

  /** The last statement of the worker's listening session (LISTEN or UNLISTEN), once `expected` matches it. */
  async function listenerState(expected: RegExp): Promise<string> {
    let last = '';
    // By the clock, not by tries: a loaded machine answers each look slower.
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      const rows = await query<{ query: string }>(
        url,
        `select query from pg_stat_activity where query ~ '^(un)?listen "stepwise_' and state = 'idle'`,
      );
      last = rows[0]?.query ?? '';
      if (expected.test(last)) return last;
      await sleep(10);
    }
    throw new Error(`the listener's last statement is "${last}", not ${expected}`);
  }

  /** The pid of the backend holding a LISTEN, once it listens. */
  async function listeningBackend(): Promise<number> {
    for (let tries = 0; tries < 200; tries++) {
      const rows = await query<{ pid: number }>(
        url,
        `select pid from pg_stat_activity where query like 'listen "stepwise_%' and state = 'idle'`,
      );
      if (rows[0]) return rows[0].pid;
      await sleep(25);
    }
    throw new Error('no worker listens');
  }

  async function doneWithin(client: PostgresStore, runId: string, timeoutMs: number): Promise<number> {
    const started = Date.now();
    for (;;) {
      const row = await client.db
        .selectFrom('work_queue')
        .select('state')
        .where('run_id', '=', runId)
        .executeTakeFirst();
      if (row?.state === 'done') return Date.now() - started;
      if (Date.now() - started > timeoutMs) throw new Error(`run ${runId} not done after ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  it('sleeps while the queue is empty and claims an enqueued run at once', async () => {
    const polling = await setUp(false);
    const { client, counts, worker } = await setUp(true);
    await listeningBackend();
    await sleep(200);
    const before = { listening: counts.claims, polling: polling.counts.claims };
    await sleep(1_000);
    // Polling every 20 ms makes dozens of claims a second; listening, none until news or 5 s pass.
    expect(polling.counts.claims - before.polling).toBeGreaterThan(10);
    expect(counts.claims - before.listening).toBe(0);
    const { runId } = await enqueue(
      chainOf(2, () => 'work'),
      { store: client },
    );
    expect(await doneWithin(client, runId, 2_000)).toBeLessThan(2_000);
    expect(counts.claims - before.listening).toBeLessThanOrEqual(3);
    await harness.stop(worker);
    await harness.stop(polling.worker);
  });

  it('stops listening while full, and listens again once it has room and nothing to claim', async () => {
    const { client, worker } = await setUp(true, 1);
    await listenerState(/^listen/);
    const slow = await enqueue(
      chainOf(1, () => 'work', 800),
      { store: client },
    );
    // Full: news would cost its session a transaction each and change nothing.
    await listenerState(/^unlisten/);
    const next = await enqueue(
      chainOf(1, () => 'work'),
      { store: client },
    );
    await doneWithin(client, slow.runId, 5_000);
    // Not announced to it, but claimed the moment the slow run ended.
    await doneWithin(client, next.runId, 1_000);
    await listenerState(/^listen/);
    await harness.stop(worker);
  });

  it('polls instead while news comes faster than the poll interval, and listens again once the queue is quiet', async () => {
    // A poll interval that three enqueues at once fit in even on a loaded machine (with 20 ms, and
    // once with 500, they did not, and the worker rightly kept listening). It is also how long the
    // worker polls before it listens again (its polls back off to the interval): the looks at
    // pg_stat_activity, each a new connection, must not miss that while the machine is loaded.
    const { client, worker } = await setUp(true, 4, 2_000);
    await listenerState(/^listen/);
    const enqueued = await Promise.all(
      [0, 1, 2].map(() =>
        enqueue(
          chainOf(1, () => 'work'),
          { store: client },
        ),
      ),
    );
    const runIds = enqueued.map((run) => run.runId);
    // Three notifications within the poll interval: each would cost the session a transaction; polls cost less.
    await listenerState(/^unlisten/);
    for (const runId of runIds) await doneWithin(client, runId, 5_000);
    await listenerState(/^listen/);
    await harness.stop(worker);
  });

  it('claims what was enqueued while its listening connection was cut, once it listens again', async () => {
    const { client } = await setUp(true);
    const pid = await listeningBackend();
    await sleep(200);
    await query(url, 'select pg_terminate_backend($1)', [pid]);
    // Announced while nobody listens: the news is lost, and the next look is 5 s away.
    const { runId } = await enqueue(
      chainOf(2, () => 'work'),
      { store: client },
    );
    expect(await doneWithin(client, runId, 3_000)).toBeLessThan(3_000);
    expect(await listeningBackend()).not.toBe(pid);
  });
});
