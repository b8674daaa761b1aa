import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineTool, ErrorCodes, type RunEvent, readAll, respond, ToolRegistry } from '@stepwise/core';
import { createPolicyEngine, journaledPolicy, permissivePolicy, policyFromJournal } from '@stepwise/core/engine';
import { executionRecord, foldRun, JOURNAL_VERSION, summarizeRun } from '@stepwise/core/store';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION } from '../src/index.js';
import { stepsFromFold } from './fold-expectations.js';
import { fixture, temporaryDirectory } from './helpers.js';

// Written by release 0.1 (commit a0e20e4) with test/fixtures/journal-v1/write-release-fixtures.mjs:
// the database, and the JSONL of its two runs (kept with core's fixtures).
const DATABASE = fixture('journal-v1/release-journal.sqlite');
const jsonl = (runId: string) =>
  readFileSync(new URL(`../../core/test/fixtures/journal-v1/${runId}.jsonl`, import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RunEvent);

const directory = temporaryDirectory('release');
let copies = 0;
function copyOfRelease(): string {
  const path = join(directory, `release-${copies++}.db`);
  copyFileSync(DATABASE, path);
  return path;
}

describe('a database written by release 0.1', () => {
  it('opens (migrated to the latest schema, journal format 1) and answers as core folds its journals', async () => {
    const path = copyOfRelease();
    const store = createSqliteStore({ path });
    await store.ready;
    for (const runId of ['run_fixture_release', 'run_fixture_waiting']) {
      const events = await readAll(store, runId);
      expect(events).toEqual(jsonl(runId));
      const fold = foldRun(events, runId);
      expect(await store.getRun(runId)).toEqual(summarizeRun(fold));
      expect(await store.listSteps(runId)).toEqual(stepsFromFold(fold));
      for (const executionId of fold.executions.keys()) {
        expect(await store.getExecution(executionId)).toEqual(executionRecord(fold, executionId));
      }
    }
    const release = await store.getRun('run_fixture_release');
    expect(release).toMatchObject({ status: 'completed', stepCount: 5, usage: { totalTokens: 300 } });
    const parse = (await store.listSteps('run_fixture_release')).find((step) => step.stepId === 'parse');
    expect(parse).toMatchObject({ status: 'succeeded', attempt: 2 });
    await store.close();
    const sql = new Database(path, { readonly: true });
    expect(sql.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(sql.prepare("select value from store_metadata where name = 'journal_version'").pluck().get()).toBe(1);
    expect(sql.prepare('select count(*) from model_calls').pluck().get()).toBe(2);
    expect(
      sql.prepare("select decided_by from approvals_view where run_id = 'run_fixture_release'").pluck().all(),
    ).toEqual(['reviewer']);
    sql.close();
  });

  it('resumes its waiting run once a person approved, running only the step that waited', async () => {
    const store = createSqliteStore({ path: copyOfRelease() });
    const calls: string[] = [];
    const tools = new ToolRegistry([
      defineTool({
        name: 'fetch_data',
        description: 'Returns the named data set',
        input: { type: 'object' },
        effect: 'read',
        execute: () => {
          calls.push('fetch_data');
          return {};
        },
      }),
      defineTool({
        name: 'publish_note',
        description: 'Publishes a note (not idempotent)',
        input: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        effect: 'write',
        idempotent: false,
        execute: ({ text }) => {
          calls.push(`publish_note ${String(text)}`);
          return { exitCode: 0, published: text };
        },
      }),
    ]);
    // The run was journaled by the agentic engine, whose policy this is (its plan has no goal step).
    const policy = permissivePolicy({ tools }, { name: 'agentic', validation: 'agentic' });
    const engine = createPolicyEngine({
      policy,
      options: { tools, store },
      journaledOptions: journaledPolicy(policy),
      policyFromJournal: (journaled) => policyFromJournal(journaled, policy),
    });
    await respond(store, 'run_fixture_waiting', { stepId: 'deploy', decision: 'approve', by: 'ops' });
    const result = await engine.resume('run_fixture_waiting').result;
    expect(result.status).toBe('completed');
    expect(calls).toEqual(['publish_note deploy']);
    const events = await readAll(store, 'run_fixture_waiting');
    expect(await store.getRun('run_fixture_waiting')).toEqual(summarizeRun(foldRun(events)));
    await store.close();
  });
});

describe('the journal format a database records', () => {
  it('refuses (E504) a file whose journals are newer than this release reads, and leaves it unchanged', async () => {
    const path = copyOfRelease();
    await createSqliteStore({ path }).close();
    const sql = new Database(path);
    sql.prepare("update store_metadata set value = ? where name = 'journal_version'").run(JOURNAL_VERSION + 1);
    sql.close();
    const before = readFileSync(path);
    let error: unknown;
    try {
      createSqliteStore({ path });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toMatchObject({ code: ErrorCodes.STORE_SCHEMA_NEWER, location: path });
    expect(String((error as Error).message)).toMatch(
      new RegExp(
        `journals in format version ${JOURNAL_VERSION + 1}, newer than this release reads \\(${JOURNAL_VERSION}\\)`,
      ),
    );
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('refuses (E502) a batch whose revision does not chain to the plan, as the fold does, writing nothing', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    const events = jsonl('run_fixture_release').map((event) => ({ ...event, runId: 'run_chain' }) as RunEvent);
    const revision = events.findIndex((event) => event.type === 'plan-revise');
    await store.append('run_chain', events.slice(0, revision));
    const broken = { ...events[revision], parentDigest: 'f'.repeat(64) } as RunEvent;
    await expect(
      store.append('run_chain', [broken, ...events.slice(revision + 1, revision + 3)]),
    ).rejects.toMatchObject({
      code: ErrorCodes.JOURNAL_CONFLICT,
      location: `run_chain#${revision + 1}`,
    });
    expect((await store.getRun('run_chain'))?.lastSeq).toBe(revision);
    await store.append('run_chain', events.slice(revision));
    expect(await store.getRun('run_chain')).toEqual(summarizeRun(foldRun(events)));
    await store.close();
  });

  it('refuses (E506) to append a run journaled in a newer format, writing nothing', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    const future = JOURNAL_VERSION + 1;
    const start = { ...jsonl('run_fixture_waiting')[0], runId: 'run_future', journalVersion: future } as RunEvent;
    await expect(store.append('run_future', [start])).rejects.toMatchObject({
      code: ErrorCodes.JOURNAL_VERSION_UNSUPPORTED,
      location: 'run_future#1',
      details: { runId: 'run_future', journalVersion: future, supported: JOURNAL_VERSION },
    });
    expect(await store.getRun('run_future')).toBeUndefined();
    await store.close();
  });
});
