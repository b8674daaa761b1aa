import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { fixture, spawnNode, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('lazy');

describe('loading kysely', () => {
  it('is left to the first query that needs it: a process that opens a migrated file and appends never loads it', async () => {
    const path = join(directory, 'lazy.db');
    // Migrated here: migrating is a use of kysely, opening an up-to-date file is not.
    const first = createSqliteStore({ path });
    await first.ready;
    await first.close();
    const child = spawnNode(fixture('lazy-kysely.mjs'), [path, join(directory, 'resolved.txt')]);
    const line = await child.waitFor((text) => text.startsWith('{'), 30_000);
    expect(JSON.parse(line)).toEqual({
      afterAppend: false,
      afterRead: false,
      afterQuery: true,
      read: 'run_lazy',
      listed: 1,
    });
    expect((await child.exited).code).toBe(0);
  });
});
