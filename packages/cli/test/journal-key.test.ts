import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorCodes, readAll } from '@stepwise/core';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createRunner } from '../src/create-runner.js';
import { journalKeyPath, userJournalKey } from '../src/journal-key.js';

const configHome = () => mkdtemp(path.join(os.tmpdir(), 'stepwise-journal-key-'));

describe("the user's journal key", () => {
  it('is created on first use, readable by its owner only, and the same afterwards', async () => {
    const env = { XDG_CONFIG_HOME: await configHome() };
    const file = journalKeyPath(env);
    expect(file).toBe(path.join(env.XDG_CONFIG_HOME, 'stepwise', 'journal.key'));
    const key = await userJournalKey(env);
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(await userJournalKey(env)).toBe(key);
    // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says: the home directory's is used.
    expect(journalKeyPath({ XDG_CONFIG_HOME: 'relative', HOME: '/home/someone' })).toBe(
      '/home/someone/.config/stepwise/journal.key',
    );
  });

  it('created by several processes at once is one key, and no temporary file is left', async () => {
    const env = { XDG_CONFIG_HOME: await configHome() };
    const keys = await Promise.all(Array.from({ length: 8 }, () => userJournalKey(env)));
    expect(new Set(keys).size).toBe(1);
    expect(readdirSync(path.join(env.XDG_CONFIG_HOME, 'stepwise'))).toEqual(['journal.key']);
  });

  it('in a file too short to be a key is refused with E601 naming the file', async () => {
    const env = { XDG_CONFIG_HOME: await configHome() };
    await userJournalKey(env);
    await writeFile(journalKeyPath(env), 'short\n');
    await expect(userJournalKey(env)).rejects.toMatchObject({
      code: ErrorCodes.CONFIG_INVALID,
      location: journalKeyPath(env),
      message: expect.stringMatching(/holds fewer than 16 characters/),
    });
  });
});

describe('createRunner and the journal key', () => {
  const saved = process.env.XDG_CONFIG_HOME;
  afterEach(() => {
    if (saved === undefined) delete process.env.XDG_CONFIG_HOME;
    else process.env.XDG_CONFIG_HOME = saved;
  });

  async function firstEvent(options: Parameters<typeof createRunner>[0]) {
    const workspace = await configHome();
    const runner = await createRunner({ workspace, tools: createTestTools().registry, ...options });
    try {
      const result = await runner.run(makePlan([{ id: 'a', tool: 'echo', args: {} }])).result;
      return { runner, start: (await readAll(runner.store, result.runId))[0] };
    } finally {
      await runner.close();
    }
  }

  it("keys a SQLite journal with the user's key by default; false and a memory store use none", async () => {
    process.env.XDG_CONFIG_HOME = await configHome();
    const keyed = await firstEvent({});
    expect(keyed.runner.journalKey).toBe(await userJournalKey());
    expect(keyed.start).toMatchObject({ type: 'run-start', chainAlgorithm: 'hmac-sha-256' });
    const unkeyed = await firstEvent({ journalKey: false });
    expect(unkeyed.runner.journalKey).toBeUndefined();
    expect(unkeyed.start).toMatchObject({ chainAlgorithm: 'sha-256' });
    expect((await firstEvent({ store: 'memory' })).runner.journalKey).toBeUndefined();
    const given = await firstEvent({ journalKey: 'a key the host keeps itself' });
    expect(given.runner.journalKey).toBe('a key the host keeps itself');
  });
});
