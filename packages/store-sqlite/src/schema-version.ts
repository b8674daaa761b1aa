/** Name of kysely's migration bookkeeping table in every Stepwise database. */
export const MIGRATION_TABLE = 'kysely_migration';

/**
 * The migrations this version knows, in the order they run. Kept apart from the migrations
 * themselves so that opening a database (and refusing a newer one) does not load kysely.
 */
export const MIGRATION_NAMES: readonly string[] = [
  '0001_initial',
  '0002_solve_views',
  '0003_journal_rowid',
  '0004_store_metadata',
  '0005_outputs_in_journal',
  '0006_cancel_requests',
  '0007_live_output',
  '0008_compact_journal',
  '0009_executions_from_journal',
  '0010_event_chunks',
];

/** The schema version this code writes (the number of migrations; also `PRAGMA user_version`). */
export const SCHEMA_VERSION = MIGRATION_NAMES.length;
