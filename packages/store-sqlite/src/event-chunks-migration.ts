import { type Kysely, type Migration, sql } from 'kysely';
import { executionsViewSql } from './executions-from-journal-migration.js';
import { stepsViewSql } from './outputs-in-journal-migration.js';
import { RUN_KEY_SHIFT } from './view-sql.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/**
 * SQL: the output tool-result event `e` holds, as JSON text. Since schema version 10 an output of a
 * piece or more has its whole pieces in `event_chunks` (the first of its `blob_refs`, which then
 * reads `[["output"], first, "json-chunks", count]`) and the rest of its text at `$.output`.
 * The pieces are concatenated in rowid order (a rowid range is read in order; the inner `order by`
 * keeps it so) without newer syntax, so the views open in older SQLite tools too.
 */
export const eventOutputOf = (e: string): string => {
  const ref = (index: number) => `(${e}.blob_refs ->> '$[0][${index}]')`;
  const pieces = `(select group_concat(content, '') from (select content from event_chunks where id between ${ref(1)} and ${ref(1)} + ${ref(3)} - 1 order by id))`;
  return `case when ${ref(2)} = 'json-chunks' then json(${pieces} || (${e}.payload ->> '$.output')) else ${e}.payload -> '$.output' end`;
};

/**
 * SQL: execution `x`'s output as JSON text: its column (rows written before version 5), else its
 * tool-result event's (see `eventOutputOf`); `NULL` when it is in `blobs`.
 */
export const chunkedExecutionResultOf = (x: string): string =>
  `coalesce(${x}.result, case when ${x}.result_sha256 is null then (select ${eventOutputOf('e')} from events e where e.id = ${x}.run_key * ${RUN_KEY_SHIFT} + ${x}.result_seq) end)`;

/** SQL: execution `x`'s output as `executions_view` shows it (`steps_view` shows the same, without repeating how). */
const viewedResultOf = (x: string): string =>
  `(select v.result from executions_view v where v.execution_id = ${x}.execution_id)`;

/**
 * Schema version 10: outputs whose rows would leave pages mostly empty are written in pieces.
 * SQLite keeps a row whole on one leaf page and, appending at the end of a rowid table, starts a
 * new page when the next row does not fit: journal rows of 1.6–2.4 KB (a tool-result holding such
 * an output) left a page per step. Now an output of at least a piece (999 bytes at 4 KB pages, see
 * `chunkBytesOf`) up to the inline limit has its whole pieces in `event_chunks`, four to a page,
 * and only the rest (less than a piece) in its event's row. Rows written before keep their
 * payloads and read back as they are: copying them would rewrite the whole journal on first open
 * and free no space without a VACUUM. The views that show outputs read the pieces.
 */
export const eventChunks: Migration = {
  async up(db: AnyDatabase) {
    // Its own rowid, appended in order (the event's id would spread one event's pieces over runs'
    // ranges); `event_id` (the events row, `run_key · 2³² + seq`) says whose piece it is.
    await sql`create table event_chunks (
      id integer primary key,
      event_id integer not null,
      content blob not null
    )`.execute(db);
    await sql`drop view steps_view`.execute(db);
    await sql`drop view executions_view`.execute(db);
    await sql.raw(executionsViewSql(chunkedExecutionResultOf)).execute(db);
    await sql.raw(stepsViewSql(viewedResultOf)).execute(db);
    await sql`pragma user_version = 10`.execute(db);
  },
};
