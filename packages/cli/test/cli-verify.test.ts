// The journal changed behind the store, through the built binary: the SQLite file of a workspace
// edited with better-sqlite3 (as a command without a sandbox, or another process, could), then
// show, report, resume, respond and verify run as a user would run them.
import { copyFileSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunEvent, readAll } from '@stepwise/core';
import { linkJournal } from '@stepwise/core/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseJsonLines, useCliWorkspace } from './helpers.js';

// The journal key lives under XDG_CONFIG_HOME: a directory of this file's own, not the user's.
let config = '';
beforeAll(async () => {
  config = await mkdtemp(path.join(os.tmpdir(), 'stepwise-cli-key-'));
});
const cli = useCliWorkspace();
const stepwise = (args: readonly string[], xdg = config) => cli.stepwise(args, { env: { XDG_CONFIG_HOME: xdg } });
const database = () => path.join(cli.directory, '.stepwise', 'stepwise.db');

/** Runs a plan to its end with --json: its run id and events. */
async function run(
  name: string,
  steps: unknown[],
  extra: string[] = [],
): Promise<{ runId: string; events: RunEvent[] }> {
  await cli.write(`${name}.json`, { id: name, steps });
  const outcome = await stepwise(['run', `${name}.json`, '--json', ...extra]);
  const events = parseJsonLines(outcome.stdout) as unknown as RunEvent[];
  expect(events.length, outcome.stderr).toBeGreaterThan(0);
  return { runId: events[0]?.runId as string, events };
}

/** Edits the workspace's journal file directly. */
function forge(edit: (sql: Database.Database) => void): void {
  const sql = new Database(database());
  try {
    edit(sql);
  } finally {
    sql.close();
  }
}

const EVENT = 'run_key = (select key from runs where id = ?) and seq = ?';
const setField = (runId: string, seq: number, field: string, value: unknown) =>
  forge((sql) => {
    sql
      .prepare(`update events set payload = json_set(payload, ?, json(?)) where ${EVENT}`)
      .run(field, JSON.stringify(value), runId, seq);
  });
const seqOf = (events: readonly RunEvent[], type: string) =>
  (events.find((event) => event.type === type) as RunEvent).seq;
const tampered = (runId: string, seq: number, type: string) =>
  `E507 run ${runId}: event ${seq} (${type}) does not match the journal's hash chain — the database was changed outside Stepwise`;

describe('stepwise verify and the commands that load a run', () => {
  it('an untouched run verifies, keyed with a key file only its owner can read', async () => {
    const { runId, events } = await run('intact', [{ id: 'a', tool: 'sleep_ms', args: { ms: 1, label: 'a' } }]);
    const verified = await stepwise(['verify', runId]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toBe(`${runId}: ${events.length} events, chain intact (keyed)\n`);
    expect(statSync(path.join(config, 'stepwise', 'journal.key')).mode & 0o777).toBe(0o600);
    const json = await stepwise(['verify', runId, '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ runId, ok: true, events: events.length, integrity: 'keyed' });
    // Another user's key (another XDG_CONFIG_HOME): the chain does not verify with it.
    const elsewhere = await stepwise(['verify', runId], await mkdtemp(path.join(os.tmpdir(), 'stepwise-other-key-')));
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(
      `${tampered(runId, 1, 'run-start')} (or the run was written with another journal key)`,
    );
    const usage = await stepwise(['verify']);
    expect([usage.code, usage.stderr.trim()]).toEqual([2, 'stepwise verify: name a run, or pass --all (not both)']);
  });

  it('a changed output: show, report, resume and verify refuse it, naming the step-end', async () => {
    const { runId, events } = await run('output', [{ id: 'a', tool: 'sleep_ms', args: { ms: 1, label: 'real' } }]);
    const end = seqOf(events, 'step-end');
    setField(runId, end, '$.result.output', { slept: 1, label: 'forged' });
    await cli.resetCalls();
    for (const args of [
      ['show', runId],
      ['show', runId, '--json'],
      ['report', runId],
      ['resume', runId],
      ['verify', runId],
    ]) {
      const refused = await stepwise(args);
      expect([refused.code, refused.stdout], args.join(' ')).toEqual([1, '']);
      expect(refused.stderr.trim()).toBe(`stepwise ${args[0]}: ${tampered(runId, end, 'step-end')}`);
    }
    const json = await stepwise(['verify', runId, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      code: 'E507',
      details: { runId, seq: end, eventType: 'step-end', reason: 'mismatch' },
    });
    // show of one execution: its record comes from the same run, which is refused too.
    const execution = (events.find((event) => event.type === 'tool-call') as { executionId: string }).executionId;
    expect((await stepwise(['show', execution])).stderr).toContain(tampered(runId, end, 'step-end'));
    expect(await cli.readCalls()).toEqual([]);
  });

  it('a waiting run with changed arguments cannot be answered or resumed; nothing runs', async () => {
    await cli.resetCalls();
    const { runId, events } = await run(
      'ask',
      [{ id: 'ship', tool: 'deploy', args: { target: 'staging' } }],
      ['--approve', 'pause'],
    );
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'waiting' });
    const request = seqOf(events, 'approval-request');
    setField(runId, request, '$.args', { target: 'production' });
    const answered = await stepwise(['respond', runId, '--step', 'ship', '--approve']);
    expect([answered.code, answered.stderr.trim()]).toEqual([
      1,
      `stepwise respond: ${tampered(runId, request, 'approval-request')}`,
    ]);
    const resumed = await stepwise(['resume', runId]);
    expect(resumed.stderr.trim()).toBe(`stepwise resume: ${tampered(runId, request, 'approval-request')}`);
    expect(await cli.readCalls()).toEqual([]);
  });

  it('a failed run listed as completed: runs shows the projection, verify catches it, show tells the truth', async () => {
    const { runId } = await run('fails', [{ id: 'f', tool: 'flaky', args: { key: 'once' } }]);
    forge((sql) => sql.prepare("update runs set status = 'completed' where id = ?").run(runId));
    const listed = await stepwise(['runs', '--json']);
    expect(
      (JSON.parse(listed.stdout) as { runId: string; status: string }[]).find((row) => row.runId === runId)?.status,
    ).toBe('completed');
    const verified = await stepwise(['verify', runId]);
    expect([verified.code, verified.stderr.trim()]).toEqual([
      1,
      `stepwise verify: E507 run ${runId}: the store's summary of the run does not match its journal (/status: got "completed", the fold says "failed") — the database was changed outside Stepwise`,
    ]);
    expect(JSON.parse((await stepwise(['show', runId, '--json'])).stdout).run.status).toBe('failed');
    const all = await stepwise(['verify', '--all']);
    expect(all.code).toBe(1);
    expect(all.stderr).toContain(`✗ E507 run ${runId}: the store's summary`);
    expect(all.stdout).toMatch(/\d+ runs: \d+ intact, 0 unchained, [1-9]\d* changed outside Stepwise\n$/);
  });

  it("an execution's record pointed at another call: show of it and verify refuse it", async () => {
    const { runId, events } = await run('two', [
      { id: 'first', tool: 'sleep_ms', args: { ms: 1, label: 'first' } },
      { id: 'second', tool: 'sleep_ms', args: { ms: 1, label: 'second' }, dependsOn: ['first'] },
    ]);
    const [first, second] = events.filter((event) => event.type === 'tool-call') as (RunEvent & {
      executionId: string;
    })[];
    forge((sql) =>
      sql.prepare('update executions set call_seq = ? where execution_id = ?').run(second?.seq, first?.executionId),
    );
    const shown = await stepwise(['show', first?.executionId as string]);
    expect([shown.code, shown.stderr.trim()]).toEqual([
      1,
      `stepwise show: E507 run ${runId}: the store's record of execution ${first?.executionId} does not match its journal (it differs from what the journal says) — the database was changed outside Stepwise`,
    ]);
    const verified = await stepwise(['verify', runId]);
    expect(verified.stderr).toContain(`E507 run ${runId}: the store's record of execution ${first?.executionId}`);
  });

  it('a chain recomputed without the key is refused at its first event', async () => {
    const { runId } = await run('relinked', [{ id: 'f', tool: 'flaky', args: { key: 'relinked' } }]);
    const store = createSqliteStore({ path: database() });
    const events = await readAll(store, runId);
    await store.close();
    const last = events.at(-1) as RunEvent & { status: string };
    last.status = 'completed';
    forge((edit) => {
      const write = edit.prepare(`update events set payload = ?, packing = 0 where ${EVENT}`);
      for (const { runId: _run, seq, type: _type, at: _at, ...payload } of linkJournal(events)) {
        write.run(JSON.stringify(payload), runId, seq);
      }
    });
    const verified = await stepwise(['verify', runId]);
    expect(verified.stderr.trim()).toBe(
      `stepwise verify: E507 run ${runId}: event 1 (run-start) is chained without a journal key, but a key is configured (written by a host without the key, or rewritten by someone without it) — the database was changed outside Stepwise`,
    );
  });

  it('a release-0.1 database: its runs verify as unchained and show as before', async () => {
    const copy = path.join(cli.directory, 'release.db');
    copyFileSync(
      fileURLToPath(new URL('../../store-sqlite/test/fixtures/journal-v1/release-journal.sqlite', import.meta.url)),
      copy,
    );
    const all = await stepwise(['verify', '--all', '--db', copy]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(
      /^run_fixture_\w+: \d+ events, unchained \(journaled before hash chains: nothing to check\)$/m,
    );
    expect(all.stdout).toContain('2 runs: 0 intact, 2 unchained, 0 changed outside Stepwise');
    const shown = await stepwise(['show', 'run_fixture_release', '--db', copy, '--json']);
    expect(JSON.parse(shown.stdout).run.status).toBe('completed');
  });
});
