import { defineTool, ErrorCodes, StepwiseError, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, createWorker, enqueue, type PostgresStore, type Worker } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { chainOf } from './worker-processes.js';

const postgres = await testPostgres();
let schemas = 0;

/** Tools that count calls and how many run at once (per tool and per run). */
function countingTools() {
  const calls = new Map<string, number>();
  const running = { tool: 0, maxTool: 0 };
  const runsActive = new Set<string>();
  const observed = { maxRuns: 0 };
  const tool = (name: string) =>
    defineTool({
      name,
      description: 'sleeps and counts',
      input: { type: 'object', properties: { sleepMs: { type: 'number' } } },
      effect: 'read',
      async execute(args: { sleepMs?: number }, context) {
        const key = `${context.runId}/${context.stepId}`;
        calls.set(key, (calls.get(key) ?? 0) + 1);
        running.tool++;
        running.maxTool = Math.max(running.maxTool, running.tool);
        runsActive.add(context.runId);
        observed.maxRuns = Math.max(observed.maxRuns, runsActive.size);
        await new Promise((resolve) => setTimeout(resolve, args.sleepMs ?? 0));
        running.tool--;
        runsActive.delete(context.runId);
        return { ok: true };
      },
    });
  return { registry: new ToolRegistry([tool('work'), tool('limited')]), calls, running, observed };
}

async function drain(store: PostgresStore, runIds: readonly string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await store.db
      .selectFrom('work_queue')
      .select(['run_id', 'state'])
      .where('run_id', 'in', [...runIds])
      .execute();
    if (rows.length === runIds.length && rows.every((row) => row.state === 'done')) return;
    if (Date.now() > deadline)
      throw new Error(`runs not done: ${JSON.stringify(rows.filter((row) => row.state !== 'done'))}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!postgres)('workers in one process', () => {
  const url = postgres?.url as string;
  const stores: PostgresStore[] = [];
  const workers: Worker[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });
  const openStore = (schema: string) => {
    const store = createPostgresStore({ connectionString: url, schema });
    stores.push(store);
    return store;
  };
  const startWorkers = (
    schema: string,
    count: number,
    tools: ToolRegistry,
    extra: Partial<Parameters<typeof createWorker>[0]> = {},
  ) =>
    Array.from({ length: count }, () => {
      // Each worker has its own store (pool), as separate machines would.
      const store = openStore(schema);
      const worker = createWorker({
        store,
        tools,
        engine: (limited) => dagEngine({ tools: limited, store, leaseTtlMs: 2_000 }),
        concurrency: 3,
        leaseTtlMs: 2_000,
        pollIntervalMs: 20,
        ...extra,
      });
      workers.push(worker);
      return worker;
    });

  it('runs every enqueued plan exactly once, each step once, with two workers', async () => {
    const schema = `workers_${process.pid}_${schemas++}`;
    const client = openStore(schema);
    const { registry, calls } = countingTools();
    const runIds: string[] = [];
    for (let index = 0; index < 12; index++) {
      runIds.push(
        (
          await enqueue(
            chainOf(4, () => 'work'),
            { store: client },
          )
        ).runId,
      );
    }
    const again = await enqueue(
      chainOf(1, () => 'work'),
      { store: client, runId: runIds[0] as string },
    );
    expect(again.created).toBe(false);
    startWorkers(schema, 2, registry);
    await drain(client, runIds);
    const runs = await client.listRuns({ limit: 100 });
    expect(runs.length).toBe(12);
    expect(runs.every((run) => run.status === 'completed' && run.stepCount === 4)).toBe(true);
    expect(calls.size).toBe(48);
    expect([...calls.values()].every((count) => count === 1)).toBe(true);
    const owners = await client.db.selectFrom('work_queue').select(['result_status', 'claims']).execute();
    expect(owners.every((row) => row.result_status === 'completed' && row.claims === 1)).toBe(true);
    // The queue row was done by the run-end's own transaction (its time is the event's), not by a
    // statement of the worker's afterwards (which would stamp its own, later time).
    const ends = await client.db
      .selectFrom('work_queue')
      .innerJoin('events', 'events.run_id', 'work_queue.run_id')
      .select(['work_queue.finished_at', 'events.at', 'work_queue.claimed_by'])
      .where('events.type', '=', 'run-end')
      .execute();
    expect(ends).toHaveLength(12);
    for (const end of ends) {
      expect(new Date(end.finished_at as Date).getTime()).toBe(new Date(end.at as Date).getTime());
      expect(end.claimed_by).toBeNull();
    }
  });

  it('holds a queue to its limit across workers', async () => {
    const schema = `workers_${process.pid}_${schemas++}`;
    const client = openStore(schema);
    const { registry, observed } = countingTools();
    const runIds: string[] = [];
    for (let index = 0; index < 10; index++) {
      runIds.push(
        (
          await enqueue(
            chainOf(2, () => 'work', 40),
            { store: client, queue: 'narrow' },
          )
        ).runId,
      );
    }
    startWorkers(schema, 3, registry, { queue: 'narrow', queueLimit: 2 });
    await drain(client, runIds);
    expect(observed.maxRuns).toBe(2);
  });

  it('holds a tool to its cluster-wide limit across workers', async () => {
    const schema = `workers_${process.pid}_${schemas++}`;
    const client = openStore(schema);
    const { registry, running } = countingTools();
    const runIds: string[] = [];
    for (let index = 0; index < 12; index++) {
      runIds.push(
        (
          await enqueue(
            chainOf(2, () => 'limited', 40),
            { store: client },
          )
        ).runId,
      );
    }
    startWorkers(schema, 3, registry, { toolLimits: { limited: 2 } });
    await drain(client, runIds);
    // 3 workers × 3 runs could call it 9 at once; the slots in Postgres allow 2.
    expect(running.maxTool).toBe(2);
    const slots = await client.db.selectFrom('tool_slots').selectAll().orderBy('slot').execute();
    expect(slots.map((slot) => [slot.slot, slot.holder])).toEqual([
      [0, null],
      [1, null],
    ]);
  });

  it('refuses bad input and configuration with typed errors', async () => {
    const store = openStore(`workers_${process.pid}_${schemas++}`);
    const { registry } = countingTools();
    const expectCode = async (action: () => unknown, code: string) => {
      const error = await (async () => action())().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(StepwiseError.isInstance(error) ? error.code : String(error)).toBe(code);
    };
    await expectCode(() => enqueue({ id: 'x' } as never, { store }), ErrorCodes.PLAN_INVALID);
    await expectCode(
      () =>
        enqueue(
          chainOf(1, () => 'work'),
          { store, queue: 'no spaces' },
        ),
      ErrorCodes.INPUT_INVALID,
    );
    await expectCode(
      () =>
        enqueue(
          chainOf(1, () => 'work'),
          { store, runId: "x'; drop table" },
        ),
      ErrorCodes.INPUT_INVALID,
    );
    const engine = dagEngine({ tools: registry, store });
    await expectCode(() => createWorker({ store, engine, concurrency: 0 }), ErrorCodes.CONFIG_INVALID);
    await expectCode(() => createWorker({ store, engine, toolLimits: { work: 2 } }), ErrorCodes.CONFIG_INVALID);
    await expectCode(
      () => createWorker({ store, tools: registry, engine: () => engine, toolLimits: { work: 0 } }),
      ErrorCodes.CONFIG_INVALID,
    );
    await expectCode(
      () => createPostgresStore({ connectionString: url, schema: 'Bad-Name' }),
      ErrorCodes.CONFIG_INVALID,
    );
    await expectCode(() => createPostgresStore({}), ErrorCodes.CONFIG_INVALID);
  });
});

if (!postgres) {
  describe('workers in one process', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}
