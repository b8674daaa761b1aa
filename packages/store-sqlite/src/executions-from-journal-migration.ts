import { type Kysely, type Migration, sql } from 'kysely';
import { executionResultOf } from './outputs-in-journal-migration.js';
import { isoTimeSql } from './time-codec.js';
import { RUN_KEY_SHIFT } from './view-sql.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/**
 * The columns of `executions` schema version 9 drops: each is a field of the execution's
 * `tool-call` (at `call_seq`) or `tool-result` (at `result_seq`) event, which `executions_view` reads
 * instead. The generated columns go first (they depend on `status` and `error`).
 */
const DROPPED = [
  'success',
  'error_code',
  'error_message',
  'attempt',
  'turn',
  'tool',
  'effect',
  'idempotent',
  'args',
  'started_at',
  'finished_at',
  'status',
  'duration_ms',
  'error',
];

/** SQL: the event of execution `x` at seq column `seq`, as a join condition on `events` aliased `e`. */
const eventAt = (e: string, seq: string): string => `${e}.id = x.run_key * ${RUN_KEY_SHIFT} + x.${seq}`;

/**
 * The view over `executions` since schema version 9: the call's and the result's fields from their
 * events, `resultOf(x)` giving execution `x`'s output (JSON text).
 */
export const executionsViewSql = (
  resultOf: (x: string) => string,
): string => `create view executions_view as select x.execution_id, r.id as run_id, x.step_id,
    json_extract(c.payload, '$.attempt') as attempt, json_extract(c.payload, '$.turn') as turn,
    json_extract(c.payload, '$.tool') as tool, json_extract(c.payload, '$.effect') as effect,
    json_extract(c.payload, '$.idempotent') as idempotent,
    case when x.args_sha256 is null then c.payload -> '$.args' end as args, x.args_sha256, x.call_seq, x.result_seq,
    ${isoTimeSql('c.at')} as started_at, ${isoTimeSql('t.at')} as finished_at,
    case when t.id is null then 'running' else json_extract(t.payload, '$.status') end as status,
    case when t.id is null then null when json_extract(t.payload, '$.status') = 'succeeded' then 1 else 0 end as success,
    json_extract(t.payload, '$.durationMs') as duration_ms, x.exit_code, t.payload -> '$.error' as error,
    json_extract(t.payload, '$.error.code') as error_code, json_extract(t.payload, '$.error.message') as error_message,
    ${resultOf('x')} as result, x.result_sha256, x.run_key
  from executions x join runs r on r.key = x.run_key
  left join events c on ${eventAt('c', 'call_seq')}
  left join events t on ${eventAt('t', 'result_seq')}`;

/**
 * Schema version 9: an execution's row holds only what its events do not — its id, run, step, the
 * seqs of its call and result, the exit code, and the blobs of large arguments and (before version
 * 5) outputs. Its tool, effect, arguments, times, status, duration and error are the events', and
 * `executions_view` shows them from there (two rowid lookups per row). Rows written before lose
 * the dropped columns: their events hold the same values.
 */
export const executionsFromJournal: Migration = {
  async up(db: AnyDatabase) {
    await sql`drop view executions_view`.execute(db);
    for (const column of DROPPED) await sql.raw(`alter table executions drop column ${column}`).execute(db);
    await sql.raw(executionsViewSql(executionResultOf)).execute(db);
    await sql`pragma user_version = 9`.execute(db);
  },
};
