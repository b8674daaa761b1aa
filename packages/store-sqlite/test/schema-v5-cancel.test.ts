import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, type RunEvent, readAll } from '@stepwise/core';
import { cancelRun } from '@stepwise/core/store';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION } from '../src/index.js';
import { fixture, temporaryDirectory } from './helpers.js';

// Written by the store at schema version 5 (commit 06b34cf) with
// test/fixtures/schema-v5/write-schema-v5-fixture.mjs: `run_done` completed, `run_stopped` stopped
// with a step in flight and its lease released. The JSON is what that release read back.
const DATABASE = fixture('schema-v5/schema-v5.sqlite');
const READS = JSON.parse(readFileSync(fixture('schema-v5/schema-v5-reads.json'), 'utf8')) as {
  status: string;
  events: RunEvent[];
};

const directory = temporaryDirectory('schema-v5');

describe('a database written at schema version 5', () => {
  it('opens (migrated, with cancel_requests), reads back its runs, and takes and forgets cancel requests', async () => {
    const path = join(directory, 'copy.sqlite');
    copyFileSync(DATABASE, path);
    const before = new Database(path, { readonly: true });
    expect(before.pragma('user_version', { simple: true })).toBe(5);
    expect(before.prepare("select name from sqlite_master where name = 'cancel_requests'").get()).toBeUndefined();
    before.close();

    const store = createSqliteStore({ path });
    expect(await readAll(store, 'run_done')).toEqual(READS.events);
    await expect(cancelRun(store, 'run_done', { by: 'alice' })).rejects.toMatchObject({
      code: ErrorCodes.RUN_ENDED,
      location: 'run_done',
    });
    // A run of the old file another process holds: the request waits in the new table for its lease.
    const lease = await store.acquireLease('run_stopped', 'other-process', 60_000);
    expect(lease?.cancelRequest).toBeUndefined();
    const outcome = await cancelRun(store, 'run_stopped', { by: 'alice', reason: 'migrated' });
    expect(outcome.outcome).toBe('requested');
    const renewed = await store.renewLease(lease as NonNullable<typeof lease>);
    expect(renewed.cancelRequest).toMatchObject({ by: 'alice', reason: 'migrated' });
    await store.releaseLease(renewed);
    // Nobody holds it now: cancelRun ends it, and the run-end forgets the request.
    const ended = await cancelRun(store, 'run_stopped', { by: 'bob' });
    expect(ended.outcome === 'cancelled' && ended.result.status).toBe('cancelled');
    const end = (await readAll(store, 'run_stopped')).at(-1);
    expect(end).toMatchObject({ type: 'run-end', status: 'cancelled', by: 'bob' });
    await store.close();

    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBe(10);
    expect(after.prepare('select count(*) from cancel_requests').pluck().get()).toBe(0);
    after.close();
  });
});
