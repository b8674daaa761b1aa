import { type Kysely, type Migration, sql } from 'kysely';
import { isoTimeSql } from './time-codec.js';
import { RUN_KEY_SHIFT } from './view-sql.js';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

/** SQL: the output execution `x`'s tool-result event holds (JSON text), `NULL` when it holds none. */
export const journaledResultOf = (x: string): string =>
  `(select e.payload -> '$.output' from events e where e.id = ${x}.run_key * ${RUN_KEY_SHIFT} + ${x}.result_seq)`;

/** SQL: execution `x`'s output as JSON text: its column (rows written before version 5) or its tool-result event. */
export const executionResultOf = (x: string): string =>
  `coalesce(${x}.result, case when ${x}.result_sha256 is null then ${journaledResultOf(x)} end)`;

/**
 * `steps_view` since schema version 5, `resultOf(x)` giving execution `x`'s output (JSON text): a
 * step whose output is its execution's shows that one.
 */
export function stepsViewSql(resultOf: (x: string) => string): string {
  const iso = isoTimeSql;
  const fromExecution = (column: string) =>
    `(select ${column} from executions x where x.execution_id = s.execution_id and x.run_key = s.run_key)`;
  return `create view steps_view as select r.id as run_id, s.step_id, s.first_seq, s.plan_index, s.status, s.attempt,
        s.tool, s.description, s.execution_id, ${iso('s.started_at')} as started_at, ${iso('s.ended_at')} as ended_at,
        s.duration_ms, s.tool_called, s.idempotent,
        case when s.output_from_execution = 1 then ${fromExecution(resultOf('x'))} else s.output end as output,
        case when s.output_from_execution = 1 then ${fromExecution('x.result_sha256')} else s.output_sha256 end
          as output_sha256,
        s.error, s.error_code, s.error_message, s.usage, s.prompt_tokens, s.completion_tokens, s.total_tokens, s.run_key
      from steps s join runs r on r.key = s.run_key`;
}

/**
 * Schema version 5: an output is held once. A value small enough to stay inline was held by the
 * tool-result event, the step-end event, the execution's row and the step's row; rows over about
 * 1,000 bytes then spilled into mostly empty overflow pages. Now the tool-result event holds it;
 * the step-end leaves it out (see payload-packing), the execution's `result` is `NULL` (the view
 * reads it from the event) and a step whose output is its execution's says so in
 * `output_from_execution` instead of holding a copy. Large values still go to `blobs`, referenced
 * as before. Rows written before stay as they are: the views read both.
 */
export const outputsInJournal: Migration = {
  async up(db: AnyDatabase) {
    await sql`alter table steps add column output_from_execution integer not null default 0`.execute(db);
    await sql`drop view steps_view`.execute(db);
    await sql`drop view executions_view`.execute(db);
    const iso = isoTimeSql;
    await sql.raw(stepsViewSql(executionResultOf)).execute(db);
    await sql
      .raw(`create view executions_view as select x.execution_id, r.id as run_id, x.step_id, x.attempt, x.turn, x.tool,
        x.effect, x.idempotent, x.args, x.args_sha256, x.call_seq, x.result_seq, ${iso('x.started_at')} as started_at,
        ${iso('x.finished_at')} as finished_at, x.status, x.success, x.duration_ms, x.exit_code, x.error,
        x.error_code, x.error_message, ${executionResultOf('x')} as result, x.result_sha256, x.run_key
      from executions x join runs r on r.key = x.run_key`)
      .execute(db);
    await sql`pragma user_version = 5`.execute(db);
  },
};
