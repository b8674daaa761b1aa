// A database changed behind the store's back (better-sqlite3 on the real file, as another process
// or a command without a sandbox could): core's hash chain names the first event that no longer
// verifies, verifyRun also compares what the projections say with the journal.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  defineTool,
  ErrorCodes,
  type RunEvent,
  readAll,
  readVerifiedJournal,
  respond,
  ToolError,
  ToolRegistry,
  verifyJournal,
  verifyRun,
} from '@stepwise/core';
import { createPolicyEngine, permissivePolicy } from '@stepwise/core/engine';
import { linkJournal, makePlan } from '@stepwise/core/testing';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { fixture, temporaryDirectory } from './helpers.js';

const KEY = 'the journal key of these tests, at least sixteen bytes';
const directory = temporaryDirectory('tampering');
let files = 0;

const calls: string[] = [];
const tools = new ToolRegistry([
  defineTool({
    name: 'produce',
    description: 'returns its value',
    input: { type: 'object', properties: { value: {} } },
    effect: 'read',
    execute: ({ value }) => {
      calls.push(`produce ${JSON.stringify(value)}`);
      return { value };
    },
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

function engineOn(path: string, journalKey: string | undefined = KEY) {
  const store = createSqliteStore({ path });
  const engine = createPolicyEngine({
    policy: permissivePolicy({ tools, retry: { maxAttempts: 1 } }, { name: 'dag', validation: 'dag' }),
    options: { tools, store, ...(journalKey === undefined ? {} : { journalKey }) },
  });
  return { store, engine };
}

/** A database with a completed and a failed run, journaled with KEY. */
async function journaled(): Promise<{ path: string; completed: string; failed: string }> {
  const path = join(directory, `runs-${files++}.db`);
  const { store, engine } = engineOn(path);
  const completed = engine.run(
    makePlan([
      { id: 'fetch', tool: 'produce', args: { value: 'the real output' } },
      { id: 'use', tool: 'produce', args: { value: 2 }, dependsOn: ['fetch'] },
    ]),
  );
  expect((await completed.result).status).toBe('completed');
  const failed = engine.run(makePlan([{ id: 'deploy', tool: 'breaks', description: 'deploys' }]));
  expect((await failed.result).status).toBe('failed');
  await store.close();
  return { path, completed: completed.runId, failed: failed.runId };
}

/** Edits the file directly, as something other than the store. */
function forge(path: string, edit: (sql: Database.Database) => void): void {
  const sql = new Database(path);
  try {
    edit(sql);
  } finally {
    sql.close();
  }
}

const EVENT = 'run_key = (select key from runs where id = ?) and seq = ?';

async function eventsOf(path: string, runId: string): Promise<RunEvent[]> {
  const store = createSqliteStore({ path });
  try {
    return await readAll(store, runId);
  } finally {
    await store.close();
  }
}

const seqOf = (events: readonly RunEvent[], type: string) =>
  (events.find((event) => event.type === type) as RunEvent).seq;

/** What loading the run says: the E507 message, or 'intact'. */
async function loaded(path: string, runId: string): Promise<string> {
  const store = createSqliteStore({ path });
  try {
    await readVerifiedJournal(store, runId, { journalKey: KEY });
    return 'intact';
  } catch (error) {
    expect(error).toMatchObject({ code: ErrorCodes.JOURNAL_TAMPERED });
    return (error as Error).message;
  } finally {
    await store.close();
  }
}

const tampered = (runId: string, seq: number, type: string, why = "does not match the journal's hash chain") =>
  `run ${runId}: event ${seq} (${type}) ${why} — the database was changed outside Stepwise`;

describe('a SQLite file changed behind the store', () => {
  it('untouched, every run verifies, keyed, journal and projections', async () => {
    const { path, completed, failed } = await journaled();
    const store = createSqliteStore({ path });
    for (const runId of [completed, failed]) {
      const events = await readAll(store, runId);
      expect(events.every((event) => typeof event.chain === 'string')).toBe(true);
      expect(await verifyRun(store, runId, { journalKey: KEY })).toMatchObject({
        ok: true,
        integrity: 'keyed',
        events: events.length,
      });
    }
    await store.close();
  });

  it('a changed output: load, resume and verifyRun name the step-end', async () => {
    const { path, completed } = await journaled();
    const end = seqOf(await eventsOf(path, completed), 'step-end');
    forge(path, (sql) => {
      sql
        .prepare(`update events set payload = json_set(payload, '$.result.output', json(?)) where ${EVENT}`)
        .run(JSON.stringify({ value: 'forged' }), completed, end);
    });
    expect(await loaded(path, completed)).toBe(tampered(completed, end, 'step-end'));
    const { store, engine } = engineOn(path);
    // Not "already ended" from a forged journal: refused before anything is replayed or run.
    const before = calls.length;
    await expect(engine.resume(completed).result).rejects.toMatchObject({
      code: ErrorCodes.JOURNAL_TAMPERED,
      details: { runId: completed, seq: end, eventType: 'step-end', reason: 'mismatch' },
    });
    expect(calls.length).toBe(before);
    expect(await verifyRun(store, completed, { journalKey: KEY })).toMatchObject({ ok: false, seq: end });
    await store.close();
  });

  it('a failed run made to look completed, in the journal and in its projections', async () => {
    const { path, failed } = await journaled();
    const events = await eventsOf(path, failed);
    const end = seqOf(events, 'run-end');
    forge(path, (sql) => {
      sql
        .prepare(`update events set payload = json_set(payload, '$.status', 'completed') where ${EVENT}`)
        .run(failed, end);
      sql.prepare("update runs set status = 'completed' where id = ?").run(failed);
      sql
        .prepare("update steps set status = 'succeeded' where run_key = (select key from runs where id = ?)")
        .run(failed);
    });
    expect(await loaded(path, failed)).toBe(tampered(failed, end, 'run-end'));
  });

  it('projections alone: the journal verifies, verifyRun names the summary or the execution', async () => {
    const { path, failed } = await journaled();
    forge(path, (sql) => sql.prepare("update runs set status = 'completed' where id = ?").run(failed));
    expect(await loaded(path, failed)).toBe('intact');
    const store = createSqliteStore({ path });
    expect(await store.getRun(failed)).toMatchObject({ status: 'completed' });
    expect(await verifyRun(store, failed, { journalKey: KEY })).toEqual({
      ok: false,
      runId: failed,
      reason: 'projection',
      view: 'summary',
      difference: '/status: got "completed", the fold says "failed"',
    });
    await store.close();
    forge(path, (sql) => {
      sql.prepare("update runs set status = 'failed' where id = ?").run(failed);
      sql.prepare("update steps set description = 'a harmless step' where step_id = 'deploy'").run();
    });
    const again = createSqliteStore({ path });
    expect(await verifyRun(again, failed, { journalKey: KEY })).toMatchObject({
      ok: false,
      reason: 'projection',
      view: expect.stringMatching(/^execution ex_/),
      difference: '/why/stepDescription: got "a harmless step", the fold says "deploys"',
    });
    await again.close();
  });

  it('a deleted event, and two events swapped', async () => {
    const { path, completed } = await journaled();
    const events = await eventsOf(path, completed);
    const call = seqOf(events, 'tool-call');
    const copy = join(directory, `swapped-${files++}.db`);
    copyFileSync(path, copy);
    forge(path, (sql) => sql.prepare(`delete from events where ${EVENT}`).run(completed, call));
    expect(await loaded(path, completed)).toBe(
      tampered(completed, call + 1, 'tool-result', 'is out of sequence: events before it are missing or out of order'),
    );
    forge(copy, (sql) => {
      const row = sql.prepare(`select type_code, payload, packing, at, chain from events where ${EVENT}`);
      const first = row.get(completed, call) as Record<string, unknown>;
      const second = row.get(completed, call + 1) as Record<string, unknown>;
      const write = sql.prepare(
        `update events set type_code = ?, payload = ?, packing = ?, at = ?, chain = ? where ${EVENT}`,
      );
      write.run(second.type_code, second.payload, second.packing, second.at, second.chain, completed, call);
      write.run(first.type_code, first.payload, first.packing, first.at, first.chain, completed, call + 1);
    });
    expect(await loaded(copy, completed)).toBe(tampered(completed, call, 'tool-result'));
  });

  it('recomputed without the key: refused at the first event, whatever algorithm it claims', async () => {
    const { path, failed } = await journaled();
    const events = await eventsOf(path, failed);
    const end = seqOf(events, 'run-end');
    (events[end - 1] as { status: string }).status = 'completed';
    for (const claimed of ['sha-256', 'hmac-sha-256']) {
      const relinked = linkJournal(events).map((event) =>
        event.seq === 1 ? ({ ...event, chainAlgorithm: claimed } as RunEvent) : event,
      );
      forge(path, (sql) => {
        // Each row as the store can hold it: the payload without the columns, nothing packed (the chain in it).
        const write = sql.prepare(
          `update events set payload = ?, packing = 0, blob_refs = null, chain = null where ${EVENT}`,
        );
        for (const { runId, seq, type: _type, at: _at, ...payload } of relinked)
          write.run(JSON.stringify(payload), runId, seq);
      });
      const store = createSqliteStore({ path });
      const forged = await readAll(store, failed);
      expect(forged[end - 1]).toMatchObject({ type: 'run-end', status: 'completed' });
      // Without the key the forgery verifies: the reason the CLI keys every chain.
      if (claimed === 'sha-256')
        expect(verifyJournal(failed, forged)).toMatchObject({ ok: true, integrity: 'unkeyed' });
      await store.close();
      expect(await loaded(path, failed)).toBe(
        claimed === 'sha-256'
          ? tampered(
              failed,
              1,
              'run-start',
              'is chained without a journal key, but a key is configured (written by a host without the key, or rewritten by someone without it)',
            )
          : `${tampered(failed, 1, 'run-start')} (or the run was written with another journal key)`,
      );
    }
  });
});

describe('chains across restarts and formats', () => {
  it('a waiting run answered and resumed by new processes keeps one chain', async () => {
    const path = join(directory, `waiting-${files++}.db`);
    const first = engineOn(path);
    const pausing = createPolicyEngine({
      policy: permissivePolicy({ tools }),
      options: { tools, store: first.store, journalKey: KEY, approvals: { policy: { tools: { produce: 'pause' } } } },
    });
    const handle = pausing.run(makePlan([{ id: 'ask', tool: 'produce', args: { value: 'asked' } }]));
    expect((await handle.result).status).toBe('waiting');
    await first.store.close();
    const answering = createSqliteStore({ path });
    await respond(answering, handle.runId, { stepId: 'ask', decision: 'approve', by: 'ops' }, { journalKey: KEY });
    await answering.close();
    const second = engineOn(path);
    expect((await second.engine.resume(handle.runId).result).status).toBe('completed');
    expect(await verifyRun(second.store, handle.runId, { journalKey: KEY })).toMatchObject({
      ok: true,
      integrity: 'keyed',
    });
    await second.store.close();
  });

  it('a release-0.1 database: its runs load as unchained, a resumed one stays so, new runs are chained', async () => {
    const path = join(directory, `release-${files++}.db`);
    copyFileSync(fixture('journal-v1/release-journal.sqlite'), path);
    const { store, engine } = engineOn(path);
    for (const runId of ['run_fixture_release', 'run_fixture_waiting']) {
      expect(await verifyRun(store, runId, { journalKey: KEY })).toMatchObject({ ok: true, integrity: 'unchained' });
    }
    await respond(store, 'run_fixture_waiting', { stepId: 'deploy', decision: 'deny', by: 'ops' }, { journalKey: KEY });
    const events = await readAll(store, 'run_fixture_waiting');
    expect(events.at(-1)).toMatchObject({ type: 'approval-response' });
    expect(events.some((event) => event.chain !== undefined)).toBe(false);
    expect(await verifyRun(store, 'run_fixture_waiting', { journalKey: KEY })).toMatchObject({
      integrity: 'unchained',
    });
    const fresh = engine.run(makePlan([{ id: 'new', tool: 'produce', args: { value: 1 } }]));
    await fresh.result;
    expect(await verifyRun(store, fresh.runId, { journalKey: KEY })).toMatchObject({ ok: true, integrity: 'keyed' });
    await store.close();
  });
});
