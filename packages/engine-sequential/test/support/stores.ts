import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryStore, type RunStore } from '@stepwise/core';
import { JsonlFileStore } from './jsonl-file-store.js';

/** A store the suites run against. `open` on the same path gives the same durable storage. */
export interface StoreVariant {
  readonly name: string;
  readonly durable: boolean;
  open(path?: string): Promise<RunStore>;
}

const sqliteDist = fileURLToPath(new URL('../../../store-sqlite/dist/index.js', import.meta.url));

/** True once `@stepwise/store-sqlite` is built; the SQLite variants are skipped until then. */
export const sqliteAvailable = existsSync(sqliteDist);

const directories: string[] = [];

/** A fresh temp directory, removed by `removeTempDirectories`. */
export function tempDirectory(prefix = 'stepwise-sequential-'): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  directories.push(directory);
  return directory;
}

export function removeTempDirectories(): void {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
}

const openSqlite = async (path: string): Promise<RunStore> => {
  // A variable specifier: the package has no types to check against until it is built.
  const specifier = '@stepwise/store-sqlite';
  const { createSqliteStore } = (await import(specifier)) as {
    createSqliteStore(options: { path: string }): RunStore | Promise<RunStore>;
  };
  return createSqliteStore({ path });
};

export const memoryVariant: StoreVariant = {
  name: 'MemoryStore',
  durable: false,
  open: async () => new MemoryStore(),
};

export const jsonlVariant: StoreVariant = {
  name: 'JSONL file store (test double)',
  durable: true,
  open: (path) => JsonlFileStore.open(path ?? join(tempDirectory(), 'journal.jsonl')),
};

export const sqliteVariant: StoreVariant = {
  name: 'SQLite store',
  durable: true,
  open: (path) => openSqlite(path ?? join(tempDirectory(), 'stepwise.db')),
};

/** The stores every behaviour suite runs against. */
export const storeVariants: readonly StoreVariant[] = sqliteAvailable
  ? [memoryVariant, sqliteVariant]
  : [memoryVariant];

/** Durable stores for the crash tests: SQLite when built, else the JSONL test double. */
export const durableVariants: readonly StoreVariant[] = sqliteAvailable ? [sqliteVariant] : [jsonlVariant];
