// A SQLite journal changed behind the store (better-sqlite3 on the real file): the run page, its
// JSON and live stream, the actions and the static report refuse the run (E507) instead of showing
// or acting on a forged journal; untouched runs are served as before.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ErrorCodes, type RunEvent, readAll } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, TOKEN_HEADER } from '../src/index.js';
import { escapeHtml, generateReport } from '../src/report.js';
import { testTools } from './dashboard-harness.js';

const KEY = 'the journal key of the dashboard tests';
const ORIGIN = 'http://127.0.0.1:4000';
const directory = mkdtempSync(path.join(os.tmpdir(), 'stepwise-dashboard-tampering-'));
const file = path.join(directory, 'journal.db');
const store = createSqliteStore({ path: file });
const engine = dagEngine({
  tools: testTools(new Set()),
  store,
  journalKey: KEY,
  approvals: { policy: { effects: { write: 'pause' } } },
});
const dashboard = createDashboard({
  store,
  journalKey: KEY,
  resume: (runId, options) => engine.resume(runId, options),
});
let completed = '';
let waiting = '';

const get = (route: string) => dashboard.fetch(new Request(`${ORIGIN}${route}`));

/** Changes one event's payload in the file, as something other than the store. */
function forge(runId: string, seq: number, path: string, value: unknown): void {
  const sql = new Database(file);
  try {
    sql
      .prepare(
        `update events set payload = json_set(payload, ?, json(?)) where run_key = (select key from runs where id = ?) and seq = ?`,
      )
      .run(path, JSON.stringify(value), runId, seq);
  } finally {
    sql.close();
  }
}

const seqOf = async (runId: string, type: string) =>
  ((await readAll(store, runId)).find((event) => event.type === type) as RunEvent).seq;

beforeAll(async () => {
  const plan = (id: string, tool: string, args: Record<string, unknown>) => ({
    id,
    version: 1,
    goal: id,
    steps: [{ id: 'only', tool, args }],
  });
  const done = engine.run(plan('done', 'sleep_ms', { ms: 1, label: 'real' }));
  completed = done.runId;
  expect((await done.result).status).toBe('completed');
  const paused = engine.run(plan('paused', 'note_write', { text: 'the real note' }));
  waiting = paused.runId;
  expect((await paused.result).status).toBe('waiting');
});

afterAll(async () => {
  await dashboard.close();
  await store.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('a run changed behind the store', () => {
  it('is served while untouched', async () => {
    expect((await get(`/runs/${completed}`)).status).toBe(200);
    expect(await generateReport(store, completed, { journalKey: KEY })).toContain('<!doctype html>');
  });

  it('is refused by its page, its JSON, its live stream and the report, naming the first bad event', async () => {
    const end = await seqOf(completed, 'step-end');
    forge(completed, end, '$.result.output', { slept: 'forged' });
    const message = `run ${completed}: event ${end} (step-end) does not match the journal's hash chain — the database was changed outside Stepwise`;
    const page = await get(`/runs/${completed}`);
    expect([page.status, page.headers.get('content-type')]).toEqual([409, 'text/html; charset=utf-8']);
    expect(await page.text()).toContain(escapeHtml(`E507 ${message}`));
    for (const route of [`/api/runs/${completed}`, `/api/runs/${completed}/events`]) {
      const response = await get(route);
      expect(response.status).toBe(409);
      expect(((await response.json()) as { error: unknown }).error).toEqual({
        code: ErrorCodes.JOURNAL_TAMPERED,
        message,
        location: `${completed}#${end}`,
      });
    }
    await expect(generateReport(store, completed, { journalKey: KEY })).rejects.toMatchObject({
      code: ErrorCodes.JOURNAL_TAMPERED,
      message,
    });
  });

  it('cannot be answered from the page: nothing is journaled', async () => {
    const page = await get(`/runs/${waiting}`);
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const token = /name="stepwise-token" content="([^"]+)"/.exec(await page.text())?.[1] as string;
    const events = await readAll(store, waiting);
    const request = events.find((event) => event.type === 'approval-request') as RunEvent & { executionId: string };
    forge(waiting, request.seq, '$.args', { text: 'a forged note' });
    const response = await dashboard.fetch(
      new Request(`${ORIGIN}/api/runs/${waiting}/actions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, [TOKEN_HEADER]: token, origin: ORIGIN },
        body: JSON.stringify({ kind: 'respond', requestId: request.executionId, decision: 'approve' }),
      }),
    );
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(ErrorCodes.JOURNAL_TAMPERED);
    expect((await readAll(store, waiting)).length).toBe(events.length);
  });
});
