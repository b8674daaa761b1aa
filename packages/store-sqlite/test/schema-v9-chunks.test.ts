import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineTool, type RunEvent, readAll, ToolRegistry, verifyJournal } from '@stepwise/core';
import { createPolicyEngine, permissivePolicy } from '@stepwise/core/engine';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION } from '../src/index.js';
import { fixture, temporaryDirectory } from './helpers.js';

// Written by the store at schema version 9 (commit 709c368) with
// test/fixtures/schema-v9/write-schema-v9-fixture.mjs: `run_done` completed (a retried step, a large
// output in `blobs`, outputs of 2,000 and 1,100 bytes inline in their tool-results, which version 10
// writes in pieces), `run_stopped` stopped with a step in flight. The JSON is what that release read back.
const DATABASE = fixture('schema-v9/schema-v9.sqlite');
const READS = JSON.parse(readFileSync(fixture('schema-v9/schema-v9-reads.json'), 'utf8')) as {
  runs: Record<string, { events: RunEvent[]; summary: unknown; steps: unknown[]; executions: unknown[] }>;
};
const RUNS = ['run_done', 'run_stopped'];

const directory = temporaryDirectory('schema-v9');

/** What SQL shows of the old runs: the journal rows and the two views that show outputs. */
function sqlRows(database: Database.Database): Record<'journal' | 'executions' | 'steps', unknown[]> {
  const old = "run_id in ('run_done', 'run_stopped')";
  return {
    journal: database.prepare(`select * from journal where ${old} order by run_id, seq`).all(),
    executions: database.prepare(`select * from executions_view where ${old} order by execution_id`).all(),
    steps: database.prepare(`select * from steps_view where ${old} order by run_id, step_id`).all(),
  };
}

const sized = defineTool({
  name: 'sized',
  description: 'Returns a text of the size asked',
  input: { type: 'object', properties: { size: { type: 'number' } }, required: ['size'] },
  effect: 'read',
  execute: (input) => ({ text: `${'é'.repeat((input as { size: number }).size / 2 - 50)}${'y'.repeat(100)}` }),
});

describe('a database written at schema version 9', () => {
  it('opens (event_chunks added, its rows left as they are), reads back as before, and writes a new run in pieces beside them', async () => {
    const path = join(directory, 'copy.sqlite');
    copyFileSync(DATABASE, path);
    const before = new Database(path, { readonly: true });
    expect(before.pragma('user_version', { simple: true })).toBe(9);
    const shownBefore = sqlRows(before);
    // The 2,000-byte output is inline in its tool-result, whole.
    expect(shownBefore.executions.map((row) => (row as { result: string | null }).result?.length ?? 0)).toContain(
      JSON.stringify({ text: `${'é'.repeat(950)}${'y'.repeat(100)}` }).length,
    );
    before.close();

    const store = createSqliteStore({ path });
    for (const runId of RUNS) {
      const expected = READS.runs[runId];
      const events = await readAll(store, runId);
      expect(JSON.stringify(events)).toBe(JSON.stringify(expected?.events));
      expect(await store.getRun(runId)).toEqual(expected?.summary);
      expect(await store.listSteps(runId)).toEqual(expected?.steps);
      expect(await store.listExecutions(runId)).toEqual(expected?.executions);
      expect(verifyJournal(runId, events)).toMatchObject({ ok: true });
    }
    // A run written now, beside the old ones: its 2,000- and 1,100-byte outputs go to pieces.
    const plan = {
      id: 'sized',
      steps: [
        { id: 'two', tool: 'sized', args: { size: 2000 } },
        { id: 'one', tool: 'sized', args: { size: 1100 }, dependsOn: ['two'] },
      ],
    };
    const tools = new ToolRegistry([sized]);
    const engine = createPolicyEngine({
      policy: permissivePolicy({ tools }, { name: 'dag', validation: 'dag' }),
      options: { tools, store },
    });
    const result = await engine.run(plan, { runId: 'run_new' }).result;
    expect(result.status).toBe('completed');
    await store.close();
    const reopened = createSqliteStore({ path });
    const written = await readAll(reopened, 'run_new');
    expect(verifyJournal('run_new', written)).toMatchObject({ ok: true });
    expect((await reopened.listSteps('run_new')).map((step) => step.output)).toEqual(
      result.steps.map((step) => step.output),
    );
    await reopened.close();

    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(10);
    // The old rows are untouched and the views show them as version 9 did.
    expect(sqlRows(after)).toEqual(shownBefore);
    // Only the new run has pieces: two of the 2,000-byte output's JSON text (2,011 bytes), one of the other's.
    const pieces = after
      .prepare(
        `select r.id as run_id, e.seq, count(*) as pieces, sum(length(c.content)) as bytes from event_chunks c
         join events e on e.id = c.event_id join runs r on r.key = e.run_key group by c.event_id order by e.seq`,
      )
      .all();
    expect(pieces).toEqual([
      { run_id: 'run_new', seq: expect.any(Number), pieces: 2, bytes: 1998 },
      { run_id: 'run_new', seq: expect.any(Number), pieces: 1, bytes: 999 },
    ]);
    const shown = after
      .prepare("select result from executions_view where run_id = 'run_new' order by call_seq")
      .pluck()
      .all();
    expect(shown).toEqual(result.steps.map((step) => JSON.stringify(step.output)));
    after.close();
  });
});
