import { type Kysely, type Migration, sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/**
 * Schema version 7: `live_output`, the tail of each running call's output per stream, written by the
 * process running it (outside the journal's transactions) so another process can show it. Not part
 * of the journal; a call's rows go when it ends, a run's with its `run-end`.
 */
export const liveOutput: Migration = {
  async up(db: AnyDatabase) {
    await db.schema
      .createTable('live_output')
      .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
      .addColumn('execution_id', 'text', (column) => column.notNull())
      .addColumn('stream', 'text', (column) => column.notNull())
      .addColumn('step_id', 'text', (column) => column.notNull())
      .addColumn('text', 'text', (column) => column.notNull())
      .addColumn('total', 'integer', (column) => column.notNull())
      .addColumn('updated_at', 'text', (column) => column.notNull())
      .addPrimaryKeyConstraint('live_output_primary_key', ['run_key', 'execution_id', 'stream'])
      .modifyEnd(sql`without rowid`)
      .execute();
    await sql`pragma user_version = 7`.execute(db);
  },
};
