import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { fixture, temporaryDirectory } from './helpers.js';

const RECORD_RESOLUTIONS = fileURLToPath(new URL('../../../scripts/record-resolutions.mjs', import.meta.url));

const directory = temporaryDirectory('lazy');

describe('loading kysely', () => {
  it('is left to the first query that needs it: a process that opens a migrated file and appends never loads it', async () => {
    const path = join(directory, 'lazy.db');
    // Migrated here: migrating is a use of kysely, opening an up-to-date file is not.
    const first = createSqliteStore({ path });
    await first.ready;
    await first.close();
    const child = spawnSync(process.execPath, ['--import', RECORD_RESOLUTIONS, fixture('lazy-kysely.mjs'), path], {
      encoding: 'utf8',
      env: { ...process.env, STEPWISE_TEST_RESOLUTIONS: join(directory, 'resolved.txt') },
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({
      afterAppend: false,
      afterRead: false,
      afterQuery: true,
      read: 'run_lazy',
      listed: 1,
    });
    expect(child.status).toBe(0);
  });
});
