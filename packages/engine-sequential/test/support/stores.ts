import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, type RunStore } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';

/** A store the suites run against. `open` on the same path gives the same durable storage. */
export interface StoreVariant {
  readonly name: string;
  readonly durable: boolean;
  open(path?: string): Promise<RunStore>;
}

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

export const memoryVariant: StoreVariant = {
  name: 'MemoryStore',
  durable: false,
  open: async () => new MemoryStore(),
};

/** A real database file in a temp directory (WAL, synchronous NORMAL: the store's defaults). */
export const sqliteVariant: StoreVariant = {
  name: 'SQLite store',
  durable: true,
  open: async (path) => createSqliteStore({ path: path ?? join(tempDirectory(), 'stepwise.db') }),
};

/** The stores every behaviour suite runs against. */
export const storeVariants: readonly StoreVariant[] = [memoryVariant, sqliteVariant];
