import { defineTool, ErrorCodes, type RunEvent, readAll, ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, enqueue, limitTools, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { createSideTables, query, spawnWorker, until, type WorkerProcess } from './worker-processes.js';

const postgres = await testPostgres();
const TTL = 1_500;
let tag = 0;

const stepEvent = (events: readonly RunEvent[], type: RunEvent['type'], stepId: string) =>
  events.find((event) => event.type === type && 'stepId' in event && event.stepId === stepId);

describe.skipIf(!postgres)('cluster-wide tool slots', () => {
  const url = postgres?.url as string;
  const processes: WorkerProcess[] = [];
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    for (const worker of processes) worker.child.kill('SIGKILL');
    await Promise.all(processes.map((worker) => worker.exited));
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });
  const openStore = async (schema: string) => {
    const store = createPostgresStore({ connectionString: url, schema });
    stores.push(store);
    await store.ready;
    return store;
  };

  it('lives as long as the lease of the run that holds it, not 30 s', async () => {
    const store = await openStore(`slots_${process.pid}_${tag++}`);
    const remaining: number[] = [];
    const tools = new ToolRegistry([
      defineTool({
        name: 'limited',
        description: 'reads how long its own slot lives',
        input: { type: 'object' },
        effect: 'read',
        async execute() {
          const rows = await sql<{ ms: number }>`select extract(epoch from expires_at - clock_timestamp()) * 1000 as ms
            from ${sql.table(`${store.schema}.tool_slots`)} where tool = 'limited' and holder is not null`.execute(
            store.db,
          );
          remaining.push(...rows.rows.map((row) => Number(row.ms)));
          return {};
        },
      }),
    ]);
    // limitTools as the CLI's `stepwise worker --tool-limits` uses it: no slot TTL of its own.
    const limited = limitTools(tools, { connection: store.connection, limits: { limited: 1 } });
    const result = await dagEngine({ tools: limited, store, leaseTtlMs: TTL }).run(
      makePlan([{ id: 'one', tool: 'limited', args: {} }]),
    ).result;
    expect(result.status).toBe('completed');
    expect(remaining).toHaveLength(1);
    expect(remaining[0]).toBeGreaterThan(0);
    expect(remaining[0]).toBeLessThanOrEqual(TTL);
  });

  it('is waited for before the call is journaled: a worker killed while waiting leaves a step that resume runs (not E309)', async () => {
    const name = `slots_${process.pid}_${tag++}`;
    const side = `${name}_side`;
    await createSideTables(url, side);
    const store = await openStore(name);
    // Another holder keeps the only slot of notify_once: the first worker waits for it.
    await sql`insert into ${sql.table(`${name}.tool_slots`)} (tool, slot, holder, expires_at)
      values ('notify_once', 0, 'blocker', clock_timestamp() + interval '1 hour')`.execute(store.db);
    const plan = makePlan([
      { id: 's0', tool: 'ledger_write' },
      { id: 's1', tool: 'notify_once', dependsOn: ['s0'] },
      { id: 's2', tool: 'ledger_write', dependsOn: ['s1'] },
    ]);
    const { runId } = await enqueue(plan, { store });
    const env = {
      STEPWISE_PG_URL: url,
      STEPWISE_PG_SCHEMA: name,
      SIDE_SCHEMA: side,
      LEASE_TTL_MS: String(TTL),
      TOOL_LIMITS: JSON.stringify({ notify_once: 1 }),
    };
    const first = spawnWorker(env);
    processes.push(first);
    await first.ready;
    const waiting = await until(
      async () => {
        const events = await readAll(store, runId);
        return stepEvent(events, 'step-start', 's1') ? events : undefined;
      },
      20_000,
      'the first worker to start s1 and wait for its slot',
    );
    expect(stepEvent(waiting, 'tool-call', 's1')).toBeUndefined();
    first.child.kill('SIGKILL');
    await first.exited;
    await sql`update ${sql.table(`${name}.tool_slots`)} set holder = null, expires_at = null
      where holder = 'blocker'`.execute(store.db);

    const second = spawnWorker(env);
    processes.push(second);
    await second.ready;
    const summary = await until(
      async () => {
        const run = await store.getRun(runId);
        return run && run.status !== 'running' ? run : undefined;
      },
      TTL * 10,
      'the run to end on the second worker',
    );
    const events = await readAll(store, runId);
    expect(summary.status).toBe('completed');
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({
      interrupted: [{ stepId: 's1', action: 'rerun' }],
    });
    const ended = stepEvent(events, 'step-end', 's1') as { result?: { status?: string; error?: { code?: string } } };
    expect(ended.result?.status).toBe('succeeded');
    expect(ended.result?.error?.code).not.toBe(ErrorCodes.STEP_INTERRUPTED);
    expect(await query(url, `select step_id from ${side}.notifications`)).toEqual([{ step_id: 's1' }]);
  }, 60_000);
});

if (!postgres) {
  describe('cluster-wide tool slots', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}
