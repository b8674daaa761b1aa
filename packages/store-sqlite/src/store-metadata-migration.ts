import { type Kysely, type Migration, sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/** The row of `store_metadata` naming the journal format the store writes (core's `JOURNAL_VERSION`). */
export const JOURNAL_VERSION_KEY = 'journal_version';

/**
 * Schema version 4: `store_metadata`, facts about the file as a whole. `journal_version` is the
 * journal format this store writes (core's `JOURNAL_VERSION`): a release that writes a newer one
 * raises it in a migration of its own, and an older release then refuses the file (E504) instead
 * of folding journals it would misread. Journals written before the row existed are format 1.
 */
export const storeMetadata: Migration = {
  async up(db: AnyDatabase) {
    await sql`create table store_metadata (name text primary key, value integer not null) without rowid`.execute(db);
    await sql`insert into store_metadata (name, value) values (${JOURNAL_VERSION_KEY}, 1)`.execute(db);
    await sql`pragma user_version = 4`.execute(db);
  },
};
