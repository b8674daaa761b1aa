import { type Kysely, type Migration, sql } from 'kysely';
import { isoTimeSql } from './time-codec.js';
import { eventOfRun, lastEventIdOf, lastSeqOf, RUN_KEY_SHIFT, solveViewQueries } from './view-sql.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/**
 * Schema version 3: fewer pages written per commit (a commit per step is what a chain pays for).
 *
 * - `events` becomes a rowid table keyed `run_key · 2³² + seq`; `run_key` and `seq` are virtual
 *   columns computed from it. Appending to a `WITHOUT ROWID` b-tree redistributes its last leaves
 *   at every split; a rowid b-tree appended in order just adds a page.
 * - `runs` no longer holds `last_seq` and `updated_at`, which every batch rewrote: they are the
 *   seq and time of the run's last event, and `runs_view` shows them.
 */
export const journalRowid: Migration = {
  async up(db: AnyDatabase) {
    for (const view of ['journal', 'attempts', 'validations', 'rollbacks']) {
      await sql.raw(`drop view ${view}`).execute(db);
    }
    await sql`create table events_rowid (
      id integer primary key,
      run_key integer generated always as (id >> 32) virtual references runs (key),
      seq integer generated always as (id & ${sql.raw(String(RUN_KEY_SHIFT - 1))}) virtual,
      type text not null,
      at not null,
      payload text not null,
      blob_refs text,
      packing integer not null default 0
    )`.execute(db);
    await sql`insert into events_rowid (id, type, at, payload, blob_refs, packing)
      select run_key * ${sql.raw(String(RUN_KEY_SHIFT))} + seq, type, at, payload, blob_refs, packing
      from events order by run_key, seq`.execute(db);
    await sql`drop table events`.execute(db);
    await sql`alter table events_rowid rename to events`.execute(db);
    await sql`alter table runs drop column last_seq`.execute(db);
    await sql`alter table runs drop column updated_at`.execute(db);

    const iso = isoTimeSql;
    const views: Record<string, string> = {
      journal: `select r.id as run_id, e.seq, e.type, ${iso('e.at')} as at, e.payload, e.blob_refs, e.packing, e.run_key
        from runs r join events e on ${eventOfRun('e', 'r')}`,
      runs_view: `select r.*,
          ${lastSeqOf('r')} as last_seq,
          coalesce((select ${iso('e.at')} from events e where e.id = ${lastEventIdOf('r')}), '') as updated_at
        from runs r`,
      ...solveViewQueries((type) => `from runs r join events e on ${eventOfRun('e', 'r')} where e.type = '${type}'`),
    };
    for (const [name, query] of Object.entries(views)) await sql.raw(`create view ${name} as ${query}`).execute(db);
    await sql`pragma user_version = 3`.execute(db);
  },
};
