// Rows changed behind the store's back in a throwaway Postgres server: core's hash chain names the
// first event that no longer verifies; verifyRun also compares the summary the store keeps.
import {
  defineTool,
  ErrorCodes,
  readAll,
  readVerifiedJournal,
  ToolError,
  ToolRegistry,
  verifyRun,
} from '@stepwise/core';
import { createPolicyEngine, permissivePolicy } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { query } from './worker-processes.js';

const postgres = await testPostgres();
const KEY = 'the journal key of the Postgres tests';

const tools = new ToolRegistry([
  defineTool({
    name: 'produce',
    description: 'returns its value',
    input: { type: 'object', properties: { value: {} } },
    effect: 'read',
    execute: ({ value }) => ({ value }),
  }),
  defineTool({
    name: 'breaks',
    description: 'fails',
    input: { type: 'object' },
    effect: 'read',
    execute: () => {
      throw new ToolError({ code: 'E300', message: 'it broke', retryable: false });
    },
  }),
]);

describe.skipIf(!postgres)('a Postgres journal changed behind the store', () => {
  const url = postgres?.url as string;
  const schema = `tampering_${process.pid}`;
  const stores: PostgresStore[] = [];
  const open = () => {
    const store = createPostgresStore({ connectionString: url, schema });
    stores.push(store);
    return store;
  };
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });

  async function failedRun(): Promise<string> {
    const store = open();
    const engine = createPolicyEngine({
      policy: permissivePolicy({ tools, retry: { maxAttempts: 1 } }, { name: 'dag', validation: 'dag' }),
      options: { tools, store, journalKey: KEY },
    });
    const handle = engine.run(
      makePlan([
        { id: 'fetch', tool: 'produce', args: { value: { b: 1, a: [2, 'three'] } } },
        { id: 'deploy', tool: 'breaks', dependsOn: ['fetch'] },
      ]),
    );
    expect((await handle.result).status).toBe('failed');
    return handle.runId;
  }

  const events = `${schema}.events`;

  it('verifies untouched, and after every payload went through jsonb (keys reordered)', async () => {
    const runId = await failedRun();
    expect(await verifyRun(open(), runId, { journalKey: KEY })).toMatchObject({ ok: true, integrity: 'keyed' });
    await query(url, `update ${events} set payload = payload::jsonb::json where run_id = $1`, [runId]);
    const reread = open();
    const first = (await readAll(reread, runId))[0] as unknown as Record<string, unknown>;
    expect(Object.keys(first)[0]).not.toBe('type');
    expect(await verifyRun(reread, runId, { journalKey: KEY })).toMatchObject({ ok: true, integrity: 'keyed' });
  });

  it('a failed run made completed in the journal: E507 naming its run-end', async () => {
    const runId = await failedRun();
    const [last] = await query<{ seq: number }>(url, `select max(seq) as seq from ${events} where run_id = $1`, [
      runId,
    ]);
    const seq = last?.seq;
    await query(
      url,
      `update ${events} set payload = (payload::jsonb || '{"status":"completed"}')::json where run_id = $1 and seq = $2`,
      [runId, seq],
    );
    await expect(readVerifiedJournal(open(), runId, { journalKey: KEY })).rejects.toMatchObject({
      code: ErrorCodes.JOURNAL_TAMPERED,
      message: `run ${runId}: event ${seq} (run-end) does not match the journal's hash chain — the database was changed outside Stepwise`,
      details: { runId, seq, eventType: 'run-end', reason: 'mismatch' },
    });
  });

  it('its summary alone made completed: the journal verifies, verifyRun names the summary', async () => {
    const runId = await failedRun();
    await query(
      url,
      `update ${schema}.runs set status = 'completed', summary = jsonb_set(summary, '{status}', '"completed"') where id = $1`,
      [runId],
    );
    const store = open();
    expect((await store.listRuns({ status: 'completed' })).map((run) => run.runId)).toContain(runId);
    await readVerifiedJournal(store, runId, { journalKey: KEY });
    expect(await verifyRun(store, runId, { journalKey: KEY })).toMatchObject({
      ok: false,
      reason: 'projection',
      view: 'summary',
      difference: '/status: got "completed", the fold says "failed"',
    });
  });
});
