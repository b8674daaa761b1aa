import { type Kysely, type Migration, sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/**
 * Schema version 6: `cancel_requests`, one row per running run someone asked to cancel from another
 * process (`cancelRun`), until its `run-end`. Beside the journal, never part of it: the run's own
 * process journals the cancel. Existing runs have no request; nothing else changes.
 */
export const cancelRequests: Migration = {
  async up(db: AnyDatabase) {
    await db.schema
      .createTable('cancel_requests')
      .addColumn('run_key', 'integer', (column) => column.primaryKey().references('runs.key'))
      .addColumn('requested_by', 'text', (column) => column.notNull())
      .addColumn('reason', 'text')
      .addColumn('requested_at', 'text', (column) => column.notNull())
      .execute();
    await sql`pragma user_version = 6`.execute(db);
  },
};
