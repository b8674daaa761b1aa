import { runStoreConformance } from '@stepwise/core/testing/vitest';
import { afterAll, describe, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';

const postgres = await testPostgres();
let schemas = 0;

if (postgres) {
  afterAll(() => postgres.server?.close());
  // Each store gets its own schema: the cases start from an empty store, as the suite expects.
  runStoreConformance({
    create: async () =>
      createPostgresStore({ connectionString: postgres.url, schema: `conformance_${process.pid}_${schemas++}` }),
    reopen: async (store) => {
      await store.close();
      return createPostgresStore({ connectionString: postgres.url, schema: (store as PostgresStore).schema });
    },
    // Its own pool: the race cases then contend the way two worker processes do.
    connect: async (store) =>
      createPostgresStore({ connectionString: postgres.url, schema: (store as PostgresStore).schema }),
  });
} else {
  describe.skip('store-postgres conformance (no Postgres server could start)', () => {
    it('skipped', () => undefined);
  });
}
