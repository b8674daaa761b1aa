import { defineTool, readAll, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { describe, expect, it } from 'vitest';
import { enqueue, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { workerHarness } from './worker-harness.js';
import { chainOf, until } from './worker-processes.js';

const postgres = await testPostgres();
let schemas = 0;

function countingTools() {
  const calls = new Map<string, number>();
  const registry = new ToolRegistry([
    defineTool({
      name: 'work',
      description: 'counts its calls',
      input: { type: 'object', properties: { sleepMs: { type: 'number' } } },
      effect: 'write',
      execute: async (_args, context) => {
        const key = `${context.runId}/${context.stepId}`;
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return { ok: true };
      },
    }),
  ]);
  return { registry, calls };
}

async function queueRow(store: PostgresStore, runId: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await store.db
      .selectFrom('work_queue')
      .select(['state', 'result_status', 'claims'])
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    if (row.state === 'done') return row;
    if (Date.now() > deadline) throw new Error(`run ${runId} not done: ${JSON.stringify(row)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The runs' leases once `count` of them are released (10 s at most). */
function released(store: PostgresStore, count: number) {
  return until(
    async () => {
      const leases = await store.db.selectFrom('runs').select(['lease_owner', 'lease_token']).execute();
      return leases.filter((lease) => lease.lease_owner === null).length >= count ? leases : undefined;
    },
    10_000,
    `${count} runs' leases to be released`,
  );
}

describe.skipIf(!postgres)('a worker’s first claim of a run', () => {
  const harness = workerHarness(postgres);

  function countingWorker(schema: string, tools: ToolRegistry) {
    return harness.countingWorker(
      schema,
      {
        summaryReads: /^select "summary" from "[a-z_0-9]+"\."runs" where "id"/,
        // The engine taking a run's lease by a statement of its own (the claim's is a `with`).
        leaseStatements: /^insert into "[a-z_0-9]+"\."runs" as r \(id, lease_owner/,
      },
      { tools, concurrency: 3, leaseTtlMs: 2_000, pollIntervalMs: 20 },
    );
  }

  it('starts the run without reading its summary first', async () => {
    const schema = `first_claim_${process.pid}_${schemas++}`;
    const client = await harness.store(schema);
    const { registry, calls } = countingTools();
    const runIds: string[] = [];
    for (let index = 0; index < 5; index++)
      runIds.push(
        (
          await enqueue(
            chainOf(3, () => 'work'),
            { store: client },
          )
        ).runId,
      );
    const { counts } = await countingWorker(schema, registry);
    for (const runId of runIds) expect(await queueRow(client, runId)).toMatchObject({ result_status: 'completed' });
    expect(calls.size).toBe(15);
    expect(counts.summaryReads).toBe(0);
    // Each claim took its runs' leases: the engines asked for them and were answered from memory.
    expect(counts.leaseStatements).toBe(0);
    // Released at the end, never taken again (token 1: the claim's). The run-end marks the queue row
    // done in its own commit; the lease is released by the journal's close right after, so look until then.
    const leases = await released(client, 5);
    expect(leases).toHaveLength(5);
    for (const lease of leases) expect(lease).toEqual({ lease_owner: null, lease_token: 1 });
  });

  it('replays a run whose id already has a journal (started outside the queue), running nothing again', async () => {
    const schema = `first_claim_${process.pid}_${schemas++}`;
    const client = await harness.store(schema);
    const { registry, calls } = countingTools();
    const plan = chainOf(2, () => 'work');
    // The same id run by an engine directly: its journal is complete before the queue hears of it.
    const direct = await dagEngine({ tools: registry, store: client }).run(plan, { runId: 'run_outside' }).result;
    expect(direct.status).toBe('completed');
    const journal = await readAll(client, 'run_outside');
    const queued = await enqueue(plan, { store: client, runId: 'run_outside' });
    expect(queued.created).toBe(true);
    const { counts } = await countingWorker(schema, registry);
    expect(await queueRow(client, 'run_outside')).toMatchObject({ result_status: 'completed', claims: 1 });
    // The engine's first append expected an empty journal and was refused; it looked again and replayed.
    expect(counts.summaryReads).toBe(1);
    // The run had a row: the claim left its lease alone, and the engine took it by its statement.
    expect(counts.leaseStatements).toBeGreaterThanOrEqual(1);
    expect([...calls.values()]).toEqual([1, 1]);
    expect(await readAll(client, 'run_outside')).toEqual(journal);
  });
});
