import { type Kysely, type Migration, sql } from 'kysely';
import { typeCodeOfSql, typeOfCodeSql } from './event-types.js';
import { RUN_KEY_SHIFT } from './view-sql.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/**
 * Schema version 8: a smaller journal row. `events.type` becomes a generated column over
 * `type_code` (a small integer for the types `event-types` lists, the text for any other), and the
 * new `chain` column holds an event's hash chain value as 17 bytes instead of its 32 characters in
 * the payload. The payload leaves out more of what follows from the row (see payload-packing):
 * `packing` says what. The journal is copied once; rows written before keep their payload (their
 * chain value stays in it) and read back as before. The views are dropped and made again as they
 * were, over the new table.
 */
export const compactJournal: Migration = {
  async up(db: AnyDatabase) {
    const views = await sql<{ name: string; sql: string }>`
      select name, sql from sqlite_schema where type = 'view' order by rowid`.execute(db);
    for (const view of views.rows) await sql.raw(`drop view "${view.name}"`).execute(db);
    await sql`create table events_compact (
      id integer primary key,
      run_key integer generated always as (id >> 32) virtual references runs (key),
      seq integer generated always as (id & ${sql.raw(String(RUN_KEY_SHIFT - 1))}) virtual,
      type_code not null,
      type text generated always as (${sql.raw(typeOfCodeSql('type_code'))}) virtual,
      at not null,
      payload text not null,
      blob_refs text,
      packing integer not null default 0,
      chain blob
    )`.execute(db);
    await sql`insert into events_compact (id, type_code, at, payload, blob_refs, packing)
      select id, ${sql.raw(typeCodeOfSql('type'))}, at, payload, blob_refs, packing from events order by id`.execute(
      db,
    );
    await sql`drop table events`.execute(db);
    await sql`alter table events_compact rename to events`.execute(db);
    for (const view of views.rows) await sql.raw(view.sql).execute(db);
    await sql`pragma user_version = 8`.execute(db);
  },
};
