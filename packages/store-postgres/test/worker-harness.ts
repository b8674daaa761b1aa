import type { ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import type pg from 'pg';
import { afterAll } from 'vitest';
import { createPostgresStore, createWorker, type PostgresStore, type Worker } from '../src/index.js';
import { countingPool } from './counting-pool.js';
import type { testPostgres } from './postgres-server.js';

export interface CountingWorkerOptions {
  readonly tools: ToolRegistry;
  /** The worker's and the engine's. */
  readonly leaseTtlMs: number;
  readonly concurrency?: number;
  readonly pollIntervalMs?: number;
  readonly notify?: boolean;
}

/**
 * The stores, counting pools and workers a test file opens, closed after its last test together
 * with its throwaway server. Call it inside the file's `describe` (it registers an `afterAll`).
 */
export function workerHarness(postgres: Awaited<ReturnType<typeof testPostgres>>) {
  const url = postgres?.url as string;
  const stores: PostgresStore[] = [];
  const workers: Worker[] = [];
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all(pools.map((pool) => pool.end()));
    postgres?.server?.close();
  });

  /** A store on `schema` over a pool that counts the statements `patterns` match (see `countingPool`). */
  async function countingStore<Name extends string>(schema: string, patterns: Record<Name, RegExp>) {
    const { pool, counts } = countingPool(url, patterns);
    pools.push(pool);
    const store = createPostgresStore({ pool, schema });
    stores.push(store);
    await store.ready;
    return { store, counts };
  }

  return {
    url,
    /** A store of its own on `schema` (an enqueuing process's), ready. */
    async store(schema: string): Promise<PostgresStore> {
      const store = createPostgresStore({ connectionString: url, schema });
      stores.push(store);
      await store.ready;
      return store;
    },
    countingStore,
    /** A worker (a DAG engine over `tools`) on a counting store: what it sent is in `counts`. */
    async countingWorker<Name extends string>(
      schema: string,
      patterns: Record<Name, RegExp>,
      options: CountingWorkerOptions,
    ) {
      const { store, counts } = await countingStore(schema, patterns);
      const { tools, leaseTtlMs, ...rest } = options;
      const engine = dagEngine({ tools, store, leaseTtlMs });
      const worker = createWorker({ store, engine, leaseTtlMs, ...rest });
      workers.push(worker);
      return { store, counts, worker };
    },
    /** Stops `worker` before the file ends (it is not stopped again after all). */
    async stop(worker: Worker): Promise<void> {
      workers.splice(workers.indexOf(worker), 1);
      await worker.stop();
    },
  };
}
