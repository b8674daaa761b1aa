import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStoreConformance } from '@stepwise/core/testing/vitest';
import { afterAll } from 'vitest';
import { createSqliteStore, type SqliteStore } from '../src/index.js';

const directory = mkdtempSync(join(tmpdir(), 'stepwise-sqlite-conformance-'));
let counter = 0;

afterAll(() => rmSync(directory, { recursive: true, force: true }));

// File-backed, closed and reopened on the same file for the durability cases.
runStoreConformance({
  create: async () => createSqliteStore({ path: join(directory, `store-${counter++}.db`) }),
  reopen: async (store) => {
    await store.close();
    return createSqliteStore({ path: (store as SqliteStore).path });
  },
});

// The in-memory variant hosts use for tests must meet the same contract.
runStoreConformance({ create: async () => createSqliteStore({ path: ':memory:' }) });
