import { join } from 'node:path';
import { readAll } from '@stepwise/core';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { describe, expect, it } from 'vitest';
import { chainText } from '../src/chain-column.js';
import { createSqliteStore, SCHEMA_VERSION, type StoreDatabase } from '../src/index.js';
import { migrations } from '../src/migrations.js';
import { MIGRATION_TABLE } from '../src/schema-version.js';
import { executeRun } from './audit-run.js';
import { temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('migration');
const RUNS = ['run_one', 'run_two'];
const TABLES = ['steps', 'executions', 'artifacts', 'approvals', 'model_calls'];

/** Everything a reader sees of a file: the store's answers and the SQL views. */
async function snapshot(path: string) {
  const store = createSqliteStore({ path });
  const runs = await Promise.all(
    RUNS.map(async (runId) => {
      const steps = await store.listSteps(runId);
      return {
        events: await readAll(store, runId),
        tail: await store.readEvents(runId, 3, 2),
        summary: await store.getRun(runId),
        steps,
        executions: await Promise.all(steps.map((step) => store.getExecution(step.executionId as string))),
      };
    }),
  );
  const listed = await store.listRuns();
  await store.close();
  const database = new Database(path, { readonly: true });
  const views = Object.fromEntries(
    ['journal', 'steps_view', 'executions_view', 'attempts'].map((view) => [
      view,
      database.prepare(`select * from ${view} order by run_id`).all(),
    ]),
  );
  // Since schema version 8 an event's chain value is in `events.chain`, not its payload: compare the rest.
  views.journal = (views.journal as { payload: string }[]).map((row) => {
    const { chain: _chain, ...payload } = JSON.parse(row.payload);
    return { ...row, payload };
  });
  database.close();
  return { runs, listed, views };
}

/** A file at schema version 2 holding what `current` (the latest version) holds, as version 2 laid it out. */
async function versionTwoCopy(current: string, path: string): Promise<void> {
  const database = new Database(path);
  const db = new Kysely<StoreDatabase>({ dialect: new SqliteDialect({ database }) });
  const {
    '0003_journal_rowid': _rowid,
    '0004_store_metadata': _metadata,
    '0005_outputs_in_journal': _outputs,
    '0006_cancel_requests': _cancelRequests,
    '0007_live_output': _liveOutput,
    '0008_compact_journal': _compactJournal,
    '0009_executions_from_journal': _executionsFromJournal,
    '0010_event_chunks': _eventChunks,
    ...older
  } = migrations;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => older },
    migrationTableName: MIGRATION_TABLE,
  });
  const { error } = await migrator.migrateToLatest();
  expect(error).toBeUndefined();
  database.exec(`attach '${current}' as current`);
  database.exec('insert into blobs select * from current.blobs');
  database.exec(`insert into runs select key, id, plan_id, plan_digest, plan, plan_sha256, engine, goal, status,
      authorization, parent_run_id, options, created_at, updated_at, finished_at, duration_ms, last_seq, usage,
      lease_owner, lease_token, lease_ttl_ms, lease_expires_at from current.runs_view`);
  database.exec(`insert into events (run_key, seq, type, at, payload, blob_refs, packing)
      select run_key, seq, type, at, payload, blob_refs, packing from current.events`);
  // Version 2 held every chain value in its payload.
  const putBack = database.prepare('update events set payload = ? where run_key = ? and seq = ?');
  const chained = database.prepare('select run_key, seq, payload, chain from current.events where chain is not null');
  for (const row of chained.all() as { run_key: number; seq: number; payload: string; chain: Buffer }[]) {
    putBack.run(JSON.stringify({ ...JSON.parse(row.payload), chain: chainText(row.chain) }), row.run_key, row.seq);
  }
  // Version 2 held every output in the step's and the execution's rows: take them from the views.
  const heldOutputs: Record<string, Record<string, string>> = {
    steps: {
      output: '(select v.output from current.steps_view v where v.run_key = t.run_key and v.step_id = t.step_id)',
      output_sha256:
        '(select v.output_sha256 from current.steps_view v where v.run_key = t.run_key and v.step_id = t.step_id)',
    },
    // Version 2 held the call's and the result's fields in the row too (since version 9 the view reads them from the events).
    executions: Object.fromEntries(
      ['result', 'attempt', 'turn', 'tool', 'effect', 'idempotent', 'args', 'status', 'duration_ms', 'error']
        .map((column) => [
          column,
          `(select v.${column} from current.executions_view v where v.execution_id = t.execution_id)`,
        ])
        .concat(
          ['started_at', 'finished_at'].map((column) => [
            column,
            `(select e.at from current.events e where e.id = t.run_key * 4294967296 + t.${column === 'started_at' ? 'call_seq' : 'result_seq'})`,
          ]),
        ),
    ),
  };
  for (const table of TABLES) {
    // Generated columns (hidden 2 or 3) are computed, not inserted.
    const stored = database
      .prepare('select name from pragma_table_xinfo(?) where hidden = 0')
      .pluck()
      .all(table) as string[];
    const values = stored.map((column) => heldOutputs[table]?.[column] ?? `t.${column}`);
    database.exec(`insert into ${table} (${stored.join(', ')}) select ${values.join(', ')} from current.${table} t`);
  }
  database.exec('detach current');
  await db.destroy();
}

describe('migrating a version 2 file', () => {
  it('moves the journal to rowids and drops the run tail columns, and every reader sees the same run', async () => {
    const current = join(directory, 'current.db');
    for (const runId of RUNS) await executeRun(current, runId);
    // A run that only ever held a lease has a row and no events: no reader lists it.
    const leaseOnly = createSqliteStore({ path: current });
    await leaseOnly.acquireLease('run_leased', 'w1', 1000);
    await leaseOnly.close();
    const expected = await snapshot(current);
    expect(expected.listed.map((run) => run.runId).sort()).toEqual(RUNS);
    expect(expected.runs[0]?.events.length).toBeGreaterThan(10);

    const old = join(directory, 'version-two.db');
    await versionTwoCopy(current, old);
    const before = new Database(old, { readonly: true });
    expect(before.pragma('user_version', { simple: true })).toBe(2);
    const eventCount = before.prepare('select count(*) from events').pluck().get();
    before.close();

    expect(await snapshot(old)).toEqual(expected);
    const after = new Database(old, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(after.prepare('select count(*) from events').pluck().get()).toBe(eventCount);
    const runColumns = after.prepare('select name from pragma_table_info(?)').pluck().all('runs');
    expect(runColumns).not.toContain('last_seq');
    expect(runColumns).not.toContain('updated_at');
    after.close();
  });
});
