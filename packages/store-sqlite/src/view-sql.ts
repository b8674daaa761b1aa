import { isoTimeSql } from './time-codec.js';

/**
 * Since schema version 3 an event's rowid is `run_key · 2³² + seq`: the journal is one rowid
 * b-tree appended in order (SQLite adds a page at its end instead of splitting), and a run's
 * events are one rowid range, which this condition lets SQLite search.
 */
export const RUN_KEY_SHIFT = 4294967296;

/** SQL: event `events` belongs to run `runs` (a rowid range search, not a scan). */
export const eventOfRun = (events: string, runs: string): string =>
  `${events}.id between ${runs}.key * ${RUN_KEY_SHIFT} and ${runs}.key * ${RUN_KEY_SHIFT} + ${RUN_KEY_SHIFT - 1}`;

/** SQL: the rowid of run `runs`'s last event, `NULL` when it has none. */
export const lastEventIdOf = (runs: string): string =>
  `(select max(e.id) from events e where ${eventOfRun('e', runs)})`;

/** SQL: the seq of run `runs`'s last event, 0 when it has none. */
export const lastSeqOf = (runs: string): string =>
  `coalesce(${lastEventIdOf(runs)} - ${runs}.key * ${RUN_KEY_SHIFT}, 0)`;

/**
 * The code agent's journal (`solve`) views: one row per implementation attempt, per validation
 * (its output read back from `blobs` when it was stored there) and per rollback. `from(type)` is
 * the clause naming `events e` of that type joined to their run `r`, which changed with the schema.
 */
export function solveViewQueries(from: (type: string) => string): Record<string, string> {
  const field = (path: string) => `json_extract(e.payload, '$.${path}')`;
  const common = `r.id as run_id, e.seq, ${isoTimeSql('e.at')} as at, ${field('stepId')} as step_id, ${field('attempt')} as attempt`;
  return {
    attempts: `select ${common}, ${field('implementationRunId')} as implementation_run_id,
        ${field('status')} as status, ${field('error')} as error, ${field('rolledBack')} as rolled_back,
        json_extract(e.payload, '$.changes') as changes, e.run_key ${from('attempt-end')}`,
    validations: `select ${common}, ${field('validationRunId')} as validation_run_id,
        json_extract(e.payload, '$.command') as command, ${field('exitCode')} as exit_code,
        ${field('passed')} as passed, json_extract(e.payload, '$.failingTests') as failing_tests,
        json_array_length(e.payload, '$.failingTests') as failing_count,
        coalesce(${field('output')},
          (select b.content from blobs b where b.sha256 = json_extract(e.blob_refs, '$[0][1]'))) as output,
        ${field('error')} as error, e.run_key ${from('validation-end')}`,
    rollbacks: `select ${common}, json_extract(e.payload, '$.restored') as restored,
        json_extract(e.payload, '$.removed') as removed, e.run_key ${from('workspace-rollback')}`,
  };
}
