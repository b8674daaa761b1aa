import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, type RunEvent, readAll, StepwiseError } from '@stepwise/core';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION, type SqliteStoreOptions } from '../src/index.js';
import { MIGRATION_NAMES } from '../src/schema-version.js';
import { fileDigest, fixture, runStart, sidecarsExist, spawnNode, stamp, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('bad-input');
// Another user (below) must be able to reach the subdirectories.
chmodSync(directory, 0o755);

function thrown(body: () => unknown): StepwiseError {
  try {
    body();
  } catch (error) {
    expect(StepwiseError.isInstance(error), `expected a StepwiseError, got ${String(error)}`).toBe(true);
    return error as StepwiseError;
  }
  throw new Error('expected an error');
}

async function rejected(promise: Promise<unknown>): Promise<StepwiseError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(StepwiseError.isInstance(error), `expected a StepwiseError, got ${String(error)}`).toBe(true);
  return error as StepwiseError;
}

/** A database with one run in it, closed. */
async function databaseWithARun(path: string): Promise<void> {
  const store = createSqliteStore({ path });
  await store.append('run_kept', [runStart('run_kept')]);
  await store.close();
}

describe('files that are not a usable database', () => {
  it('refuses a non-SQLite file with E503 naming it, and leaves it untouched', () => {
    const path = join(directory, 'notes.db');
    writeFileSync(path, 'these are my notes, not a database\n'.repeat(200));
    const before = fileDigest(path);
    const error = thrown(() => createSqliteStore({ path }));
    expect(error.code).toBe(ErrorCodes.STORE_UNAVAILABLE);
    expect(error.message).toContain(path);
    expect(error.location).toBe(path);
    expect(fileDigest(path)).toBe(before);
    expect(sidecarsExist(path)).toBe(false);
  });

  it('refuses a SQLite file whose pages are garbage with E503, and leaves it untouched', async () => {
    const path = join(directory, 'corrupt.db');
    await databaseWithARun(path);
    const bytes = readFileSync(path);
    // Keep page 1 (header and schema) and scribble over the rest.
    for (let index = 4096; index < bytes.length; index++) bytes[index] = (index * 7919) & 0xff;
    writeFileSync(path, bytes);
    const before = fileDigest(path);
    let error: StepwiseError;
    try {
      const store = createSqliteStore({ path });
      error = await rejected(
        (async () => {
          await store.ready;
          await readAll(store, 'run_kept');
          await store.append('run_kept', [runStart('run_kept', 2)]);
        })(),
      );
      await store.close();
    } catch (openError) {
      error = openError as StepwiseError;
    }
    expect(error.code).toBe(ErrorCodes.STORE_UNAVAILABLE);
    expect(error.message).toContain(path);
    expect(fileDigest(path)).toBe(before);
  });

  it('refuses a directory with E503', () => {
    const path = join(directory, 'a-directory.db');
    mkdirSync(path);
    expect(thrown(() => createSqliteStore({ path })).code).toBe(ErrorCodes.STORE_UNAVAILABLE);
  });

  it('accepts an empty file as a new database', async () => {
    const path = join(directory, 'empty.db');
    writeFileSync(path, '');
    const store = createSqliteStore({ path });
    await store.append('run_new', [runStart('run_new')]);
    expect((await store.getRun('run_new'))?.lastSeq).toBe(1);
    await store.close();
  });
});

describe('a database from a newer version', () => {
  it('is refused with E504 naming the file when it has a migration this code does not know', async () => {
    const path = join(directory, 'newer-migration.db');
    await databaseWithARun(path);
    const database = new Database(path);
    database
      .prepare('insert into kysely_migration (name, timestamp) values (?, ?)')
      .run('0002_future', new Date().toISOString());
    database.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    database.close();
    const before = fileDigest(path);
    const error = thrown(() => createSqliteStore({ path }));
    expect(error.code).toBe(ErrorCodes.STORE_SCHEMA_NEWER);
    expect(error.message).toContain(path);
    expect(error.message).toContain('0002_future');
    expect(error.location).toBe(path);
    expect(fileDigest(path)).toBe(before);
    expect(sidecarsExist(path)).toBe(false);
  });

  it('is refused with E504 when only its user_version is newer', async () => {
    const path = join(directory, 'newer-version.db');
    await databaseWithARun(path);
    const database = new Database(path);
    database.pragma(`user_version = ${SCHEMA_VERSION + 5}`);
    database.close();
    const before = fileDigest(path);
    expect(thrown(() => createSqliteStore({ path })).code).toBe(ErrorCodes.STORE_SCHEMA_NEWER);
    expect(fileDigest(path)).toBe(before);
  });

  it('reopens a database of the current version without migrating it again', async () => {
    const path = join(directory, 'current.db');
    await databaseWithARun(path);
    const store = createSqliteStore({ path });
    expect((await store.getRun('run_kept'))?.lastSeq).toBe(1);
    await store.close();
    const database = new Database(path, { readonly: true });
    expect(database.prepare('select name from kysely_migration').pluck().all()).toEqual([...MIGRATION_NAMES]);
    expect(database.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    database.close();
  });
});

describe('a database whose tables differ from its recorded version', () => {
  it('is refused with E503 naming the file, its journal untouched', async () => {
    const path = join(directory, 'pre-release.db');
    await databaseWithARun(path);
    const database = new Database(path);
    // A journal this code does not know under the version it records: its payload renamed.
    database.exec('alter table events rename column payload to body');
    const rows = database.prepare('select count(*) from events').pluck().get();
    database.close();
    const error = thrown(() => createSqliteStore({ path }));
    expect(error.code).toBe(ErrorCodes.STORE_UNAVAILABLE);
    expect(error.message).toContain(path);
    expect(error.message).toContain('schema version');
    const after = new Database(path, { readonly: true });
    expect(after.prepare('select count(*) from events').pluck().get()).toBe(rows);
    after.close();
  });
});

describe('a read-only directory', () => {
  // Root ignores permission bits: the probe then runs as `nobody`, for whom they hold.
  const asAnotherUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

  async function openElsewhere(path: string) {
    const child = spawnNode(fixture('open-store.mjs'), [path], asAnotherUser);
    const outcome = JSON.parse(await child.waitFor((line) => line.startsWith('{')));
    await child.exited;
    return outcome as { ok: boolean; code?: string; message?: string; location?: string };
  }

  it('gives E503 naming the file when a new database cannot be created, and creates nothing', {
    timeout: 30_000,
  }, async () => {
    const readOnly = join(directory, 'read-only-new');
    mkdirSync(readOnly);
    chmodSync(readOnly, 0o555);
    const path = join(readOnly, 'stepwise.db');
    const outcome = await openElsewhere(path);
    expect(outcome).toMatchObject({ ok: false, code: ErrorCodes.STORE_UNAVAILABLE, location: path });
    expect(outcome.message).toContain(path);
    expect(readdirSync(readOnly)).toEqual([]);
  });

  it('gives E503 for an existing database it cannot write, and changes nothing', { timeout: 30_000 }, async () => {
    const readOnly = join(directory, 'read-only-existing');
    mkdirSync(readOnly);
    const path = join(readOnly, 'stepwise.db');
    await databaseWithARun(path);
    chmodSync(path, 0o444);
    chmodSync(readOnly, 0o555);
    const before = fileDigest(path);
    const outcome = await openElsewhere(path);
    expect(outcome).toMatchObject({ ok: false, code: ErrorCodes.STORE_UNAVAILABLE, location: path });
    expect(outcome.message).toContain(path);
    expect(fileDigest(path)).toBe(before);
    expect(readdirSync(readOnly)).toEqual(['stepwise.db']);
  });

  it('gives E503 for a read-only database file in a writable directory, and changes nothing', {
    timeout: 30_000,
  }, async () => {
    const writable = join(directory, 'read-only-file');
    mkdirSync(writable);
    const path = join(writable, 'stepwise.db');
    await databaseWithARun(path);
    chmodSync(path, 0o444);
    chmodSync(writable, 0o777);
    const before = fileDigest(path);
    const outcome = await openElsewhere(path);
    expect(outcome).toMatchObject({ ok: false, code: ErrorCodes.STORE_UNAVAILABLE, location: path });
    expect(fileDigest(path)).toBe(before);
  });
});

describe('bad options', () => {
  it.each<[string, unknown, string]>([
    ['no path', {}, 'path'],
    ['a path that is not a string', { path: 42 }, 'path'],
    ['an unknown synchronous mode', { path: ':memory:', synchronous: 'OFF' }, 'synchronous'],
    ['a negative busy timeout', { path: ':memory:', busyTimeoutMs: -1 }, 'busyTimeoutMs'],
    ['a zero threshold', { path: ':memory:', artifactThresholdBytes: 0 }, 'artifactThresholdBytes'],
    ['a fractional threshold', { path: ':memory:', artifactThresholdBytes: 1.5 }, 'artifactThresholdBytes'],
    ['a zero checkpoint size', { path: ':memory:', checkpointPages: 0 }, 'checkpointPages'],
    ['a checkpoint size that is not a number', { path: ':memory:', checkpointPages: '1000' }, 'checkpointPages'],
  ])('refuses %s with E601 at the option', (_, options, location) => {
    const error = thrown(() => createSqliteStore(options as SqliteStoreOptions));
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
    expect(error.location).toBe(location);
  });

  it('takes the synchronous mode in any case', async () => {
    const store = createSqliteStore({ path: join(directory, 'full.db'), synchronous: 'full' as 'FULL' });
    await store.append('run_full', [runStart('run_full')]);
    await store.close();
  });
});

describe('a run at the end of its seq range', () => {
  /** A file whose run `run_long` holds an event at seq 2³² − 1, the last its rowid range holds. */
  async function fileWithAFullRun(name: string): Promise<string> {
    const path = join(directory, name);
    const store = createSqliteStore({ path });
    await store.append('run_long', [runStart('run_long')]);
    await store.close();
    const database = new Database(path);
    database
      .prepare(
        `insert into events (id, type_code, at, payload) select key * 4294967296 + 4294967295, 'run-resume', 0, '{}'
         from runs where id = 'run_long'`,
      )
      .run();
    database.close();
    return path;
  }

  it('refuses the event past 2³² − 1 with E004 at its seq, and writes nothing', async () => {
    const path = await fileWithAFullRun('seq-range.db');
    const reopened = createSqliteStore({ path });
    const before = fileDigest(path);
    const next = stamp('run_long', 2 ** 32, [{ type: 'run-resume' } as never]);
    const error = await rejected(reopened.append('run_long', next));
    expect(error.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(error.location).toBe('events[0].seq');
    expect((await reopened.getRun('run_long'))?.lastSeq).toBe(2 ** 32 - 1);
    await reopened.close();
    expect(fileDigest(path)).toBe(before);
  });

  it('reads from a negative seq only the run asked for, not the end of the run before it', async () => {
    const store = createSqliteStore({ path: await fileWithAFullRun('seq-range-read.db') });
    await store.append('run_next', [runStart('run_next')]);
    const events = await store.readEvents('run_next', -3);
    await store.close();
    expect(events.map((event) => [event.runId, event.seq, event.type])).toEqual([['run_next', 1, 'run-start']]);
  });
});

describe('bad events', () => {
  const cases: [string, unknown][] = [
    ['not an array', { type: 'run-start' }],
    ['a null event', [null]],
    ['an event without a type', [{ runId: 'run_bad', seq: 1, at: 'now' }]],
    ['an event without a time', [{ type: 'run-resume', runId: 'run_bad', seq: 1, owner: 'x', interrupted: [] }]],
    ['a run-start without a plan', [{ type: 'run-start', runId: 'run_bad', seq: 1, at: 'now', planId: 'p' }]],
    ['a step-start without a step', [{ type: 'step-start', runId: 'run_bad', seq: 1, at: 'now', attempt: 1 }]],
    ['a tool-call without an execution', [{ type: 'tool-call', runId: 'run_bad', seq: 1, at: 'now', stepId: 'a' }]],
    ['a step-end without a result', [{ type: 'step-end', runId: 'run_bad', seq: 1, at: 'now', stepId: 'a' }]],
    [
      'a value JSON cannot hold',
      [{ type: 'run-resume', runId: 'run_bad', seq: 1, at: 'now', owner: 10n, interrupted: [] }],
    ],
  ];

  it.each(cases)('refuses %s with E004 and writes nothing', async (_, events) => {
    const store = createSqliteStore({ path: ':memory:' });
    const error = await rejected(store.append('run_bad', events as RunEvent[]));
    expect(error.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(await readAll(store, 'run_bad')).toEqual([]);
    expect(await store.getRun('run_bad')).toBeUndefined();
    await store.close();
  });

  it('refuses a circular event with E004 and keeps the earlier batches', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    await store.append('run_cycle', [runStart('run_cycle')]);
    const looped: Record<string, unknown> = { type: 'run-resume', runId: 'run_cycle', seq: 2, at: 'now', owner: 'x' };
    looped.interrupted = [looped];
    const error = await rejected(store.append('run_cycle', [looped as unknown as RunEvent]));
    expect(error.code).toBe(ErrorCodes.INPUT_INVALID);
    expect((await readAll(store, 'run_cycle')).map((event) => event.seq)).toEqual([1]);
    await store.close();
  });

  it('refuses an empty run id with E004', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    expect((await rejected(store.append('', [runStart('')]))).code).toBe(ErrorCodes.INPUT_INVALID);
    await store.close();
  });
});

describe('a database another connection keeps locked', () => {
  it('gives a retryable E503 after busyTimeoutMs and writes nothing', async () => {
    const path = join(directory, 'locked.db');
    await databaseWithARun(path);
    const blocker = new Database(path);
    blocker.exec('begin immediate');
    const store = createSqliteStore({ path, busyTimeoutMs: 50 });
    try {
      const error = await rejected(store.append('run_locked', [runStart('run_locked')]));
      expect(error).toMatchObject({ code: ErrorCodes.STORE_UNAVAILABLE, retryable: true, location: path });
    } finally {
      blocker.exec('rollback');
      blocker.close();
    }
    // Once the lock is gone the same call goes through.
    await store.append('run_locked', [runStart('run_locked')]);
    expect((await readAll(store, 'run_locked')).length).toBe(1);
    await store.close();
  });

  it('refuses a lease request without a time-to-live with E004', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    expect((await rejected(store.acquireLease('run_x', 'me', Number.NaN))).code).toBe(ErrorCodes.INPUT_INVALID);
    expect((await rejected(store.acquireLease('run_x', 'me', -5))).code).toBe(ErrorCodes.INPUT_INVALID);
    await store.close();
  });
});

describe('a closed store', () => {
  it('answers every call with E503 and releases nothing it cannot', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    const lease = await store.acquireLease('run_closed', 'me', 1000);
    await store.close();
    await store.close();
    for (const call of [
      () => store.append('run_closed', [runStart('run_closed')]),
      () => store.getRun('run_closed'),
      () => store.listRuns(),
      () => store.getExecution('ex'),
      () => readAll(store, 'run_closed'),
      () => store.readEvents('run_closed'),
      () => store.listSteps('run_closed'),
      () => store.listExecutions('run_closed'),
      () => store.acquireLease('run_closed', 'me', 1000),
    ]) {
      expect((await rejected(call())).code).toBe(ErrorCodes.STORE_UNAVAILABLE);
    }
    await expect(store.releaseLease(lease as NonNullable<typeof lease>)).resolves.toBeUndefined();
  });
});
