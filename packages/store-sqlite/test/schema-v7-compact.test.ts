import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RunEvent, readAll, verifyJournal } from '@stepwise/core';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION } from '../src/index.js';
import { executeRun } from './audit-run.js';
import { fixture, temporaryDirectory } from './helpers.js';

// Written by the store at schema version 7 (commit 498b9bd) with
// test/fixtures/schema-v7/write-schema-v7-fixture.mjs: `run_done` completed (a retried step, a large
// output in `blobs`), `run_stopped` stopped with a step in flight under an id that is not the derived
// one. The JSON is what that release read back.
const DATABASE = fixture('schema-v7/schema-v7.sqlite');
const READS = JSON.parse(readFileSync(fixture('schema-v7/schema-v7-reads.json'), 'utf8')) as {
  runs: Record<string, { events: RunEvent[]; summary: unknown; steps: unknown[]; executions: unknown[] }>;
};
const RUNS = ['run_done', 'run_stopped'];

const directory = temporaryDirectory('schema-v7');

interface JournalRow {
  readonly run_id: string;
  readonly seq: number;
  readonly type: string;
  readonly at: string;
  readonly payload: string;
}

const journalOf = (database: Database.Database): JournalRow[] =>
  database.prepare('select run_id, seq, type, at, payload from journal order by run_id, seq').all() as JournalRow[];

/** Every execution as `executions_view` shows it (since version 9 mostly from the events). */
const executionsOf = (database: Database.Database): Record<string, unknown>[] =>
  database
    .prepare("select * from executions_view where run_id in ('run_done', 'run_stopped') order by execution_id")
    .all() as Record<string, unknown>[];

describe('a database written at schema version 7', () => {
  it('opens (the journal copied to type codes and a chain column, executions read from their events), reads back as before, and takes new runs', async () => {
    const path = join(directory, 'copy.sqlite');
    copyFileSync(DATABASE, path);
    const before = new Database(path, { readonly: true });
    expect(before.pragma('user_version', { simple: true })).toBe(7);
    const columns = () => before.prepare("select name from pragma_table_xinfo('events')").pluck().all();
    expect(columns()).not.toContain('type_code');
    const journalBefore = journalOf(before);
    const executionsBefore = executionsOf(before);
    expect(executionsBefore.map((row) => row.status).sort()).toEqual(['failed', 'succeeded', 'succeeded', 'succeeded']);
    before.close();

    const store = createSqliteStore({ path });
    for (const runId of RUNS) {
      const expected = READS.runs[runId];
      const events = await readAll(store, runId);
      expect(events).toEqual(expected?.events);
      expect(await store.getRun(runId)).toEqual(expected?.summary);
      expect(await store.listSteps(runId)).toEqual(expected?.steps);
      expect(await store.listExecutions(runId)).toEqual(expected?.executions);
      expect(verifyJournal(runId, events)).toMatchObject({ ok: true });
    }
    // A run written now, beside the old ones, in the new layout.
    await executeRun(path, 'run_new');
    await store.close();
    const reopened = createSqliteStore({ path });
    const written = await readAll(reopened, 'run_new');
    expect(written.length).toBeGreaterThan(8);
    expect(verifyJournal('run_new', written)).toMatchObject({ ok: true });
    await reopened.close();

    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(10);
    // The old rows keep their payloads (chain values in them); the views show what they showed.
    expect(journalOf(after).filter((row) => RUNS.includes(row.run_id))).toEqual(journalBefore);
    // Version 9 dropped the call's and result's columns: the view shows what version 7 stored.
    expect(executionsOf(after)).toEqual(executionsBefore);
    expect(after.prepare("select name from pragma_table_xinfo('executions')").pluck().all()).not.toContain('status');
    const layout = after
      .prepare(
        `select r.id as run_id, count(*) as events, count(e.chain) as chains, sum(typeof(e.type_code) = 'integer') as coded
         from events e join runs r on r.key = e.run_key group by r.id order by r.id`,
      )
      .all();
    expect(layout).toEqual([
      { run_id: 'run_done', events: 19, chains: 0, coded: 19 },
      { run_id: 'run_new', events: written.length, chains: written.length, coded: written.length },
      { run_id: 'run_stopped', events: 2, chains: 0, coded: 2 },
    ]);
    after.close();
  });
});
