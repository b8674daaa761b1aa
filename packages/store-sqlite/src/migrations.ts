import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';
import { cancelRequests } from './cancel-requests-migration.js';
import { compactJournal } from './compact-journal-migration.js';
import { eventChunks } from './event-chunks-migration.js';
import { executionsFromJournal } from './executions-from-journal-migration.js';
import { journalRowid } from './journal-rowid-migration.js';
import { liveOutput } from './live-output-migration.js';
import { outputsInJournal } from './outputs-in-journal-migration.js';
import { storeMetadata } from './store-metadata-migration.js';
import { isoTimeSql } from './time-codec.js';
import { solveViewQueries } from './view-sql.js';

const usageColumns = (name: string) => ({
  prompt: sql`generated always as (json_extract(${sql.ref(name)}, '$.promptTokens')) virtual`,
  completion: sql`generated always as (json_extract(${sql.ref(name)}, '$.completionTokens')) virtual`,
  total: sql`generated always as (json_extract(${sql.ref(name)}, '$.totalTokens')) virtual`,
});

const errorCode = sql`generated always as (json_extract(error, '$.code')) virtual`;
const errorMessage = sql`generated always as (json_extract(error, '$.message')) virtual`;

/** Time columns have no declared type (no affinity): epoch milliseconds or, rarely, ISO text (see time-codec). */
const time = sql``;

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

const initial: Migration = {
  async up(db: AnyDatabase) {
    await createRunTables(db);
    await createJournalTables(db);
    await createExecutionTables(db);
    await createAuditTables(db);
    await createViews(db);

    // For tools without kysely: `PRAGMA user_version` tells the schema version too.
    await sql`pragma user_version = 1`.execute(db);
  },
};

/** `blobs` (large values stored once by hash) and `runs`. */
async function createRunTables(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('blobs')
    .addColumn('sha256', 'text', (column) => column.primaryKey())
    .addColumn('size', 'integer', (column) => column.notNull())
    .addColumn('content', 'text', (column) => column.notNull())
    .execute();

  const runUsage = usageColumns('usage');
  await db.schema
    .createTable('runs')
    // The integer every other table refers to the run by: 1–3 bytes per row instead of the 28-character id.
    .addColumn('key', 'integer', (column) => column.primaryKey())
    .addColumn('id', 'text', (column) => column.notNull().unique())
    .addColumn('plan_id', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('plan_digest', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('plan', 'text')
    .addColumn('plan_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addColumn('engine', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('goal', 'text')
    .addColumn('status', 'text', (column) => column.notNull().defaultTo('running'))
    .addColumn('authorization', 'text')
    .addColumn('parent_run_id', 'text')
    .addColumn('options', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('updated_at', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('finished_at', 'text')
    .addColumn('duration_ms', 'integer')
    .addColumn('last_seq', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('usage', 'text')
    .addColumn('prompt_tokens', 'integer', (column) => column.modifyEnd(runUsage.prompt))
    .addColumn('completion_tokens', 'integer', (column) => column.modifyEnd(runUsage.completion))
    .addColumn('total_tokens', 'integer', (column) => column.modifyEnd(runUsage.total))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_token', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('lease_ttl_ms', 'integer')
    .addColumn('lease_expires_at', 'text')
    .execute();
  await db.schema.createIndex('runs_created_at').on('runs').columns(['created_at']).execute();
  await db.schema.createIndex('runs_status_created_at').on('runs').columns(['status', 'created_at']).execute();
}

/** `events` (the journal itself) and `steps`. */
async function createJournalTables(db: AnyDatabase): Promise<void> {
  // WITHOUT ROWID: the primary key is the table, so (run_key, seq) is not stored twice.
  await db.schema
    .createTable('events')
    .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('type', 'text', (column) => column.notNull())
    .addColumn('at', time, (column) => column.notNull())
    .addColumn('payload', 'text', (column) => column.notNull())
    .addColumn('blob_refs', 'text')
    // Which derivable ids the payload leaves out (see payload-packing); 0 for most events.
    .addColumn('packing', 'integer', (column) => column.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('events_primary_key', ['run_key', 'seq'])
    .modifyEnd(sql`without rowid`)
    .execute();

  const stepUsage = usageColumns('usage');
  await db.schema
    .createTable('steps')
    .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
    .addColumn('step_id', 'text', (column) => column.notNull())
    .addColumn('first_seq', 'integer', (column) => column.notNull())
    .addColumn('plan_index', 'integer')
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('attempt', 'integer', (column) => column.notNull())
    .addColumn('tool', 'text')
    .addColumn('description', 'text')
    .addColumn('execution_id', 'text')
    .addColumn('started_at', time)
    .addColumn('ended_at', time)
    .addColumn('duration_ms', 'integer')
    .addColumn('tool_called', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('idempotent', 'integer')
    .addColumn('output', 'text')
    .addColumn('output_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addColumn('error', 'text')
    .addColumn('error_code', 'text', (column) => column.modifyEnd(errorCode))
    .addColumn('error_message', 'text', (column) => column.modifyEnd(errorMessage))
    .addColumn('usage', 'text')
    .addColumn('prompt_tokens', 'integer', (column) => column.modifyEnd(stepUsage.prompt))
    .addColumn('completion_tokens', 'integer', (column) => column.modifyEnd(stepUsage.completion))
    .addColumn('total_tokens', 'integer', (column) => column.modifyEnd(stepUsage.total))
    .addPrimaryKeyConstraint('steps_primary_key', ['run_key', 'step_id'])
    .modifyEnd(sql`without rowid`)
    .execute();
}

/** `executions` (one row per tool call) and their `artifacts`. */
async function createExecutionTables(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('executions')
    .addColumn('execution_id', 'text', (column) => column.primaryKey())
    .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
    .addColumn('step_id', 'text', (column) => column.notNull())
    .addColumn('attempt', 'integer', (column) => column.notNull())
    .addColumn('turn', 'integer')
    .addColumn('tool', 'text', (column) => column.notNull())
    .addColumn('effect', 'text', (column) => column.notNull())
    .addColumn('idempotent', 'integer', (column) => column.notNull())
    .addColumn('args', 'text')
    .addColumn('args_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addColumn('call_seq', 'integer', (column) => column.notNull())
    .addColumn('result_seq', 'integer')
    .addColumn('started_at', time, (column) => column.notNull())
    .addColumn('finished_at', time)
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('success', 'integer', (column) =>
      column.modifyEnd(
        sql`generated always as (case status when 'succeeded' then 1 when 'running' then null else 0 end) virtual`,
      ),
    )
    .addColumn('duration_ms', 'integer')
    .addColumn('exit_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('error_code', 'text', (column) => column.modifyEnd(errorCode))
    .addColumn('error_message', 'text', (column) => column.modifyEnd(errorMessage))
    .addColumn('result', 'text')
    .addColumn('result_sha256', 'text', (column) => column.references('blobs.sha256'))
    .modifyEnd(sql`without rowid`)
    .execute();
  await db.schema
    .createIndex('executions_run_step')
    .on('executions')
    .columns(['run_key', 'step_id', 'call_seq'])
    .execute();

  await db.schema
    .createTable('artifacts')
    .addColumn('execution_id', 'text', (column) => column.notNull().references('executions.execution_id'))
    .addColumn('position', 'integer', (column) => column.notNull())
    .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('name', 'text')
    .addColumn('media_type', 'text')
    .addColumn('truncated', 'integer')
    .addColumn('size', 'integer', (column) => column.notNull())
    .addColumn('content', 'text')
    .addColumn('content_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addPrimaryKeyConstraint('artifacts_primary_key', ['execution_id', 'position'])
    .modifyEnd(sql`without rowid`)
    .execute();
  // An execution's artifacts are those of its latest result. Artifacts exist only once a result
  // was journaled, so the append path never deletes anything for a first call or first result.
  await sql`create trigger executions_replace_artifacts
    after update of call_seq, result_seq on executions
    when old.result_seq is not null
    begin
      delete from artifacts where execution_id = old.execution_id;
    end`.execute(db);
}

/** `approvals` and `model_calls`. */
async function createAuditTables(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('approvals')
    .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('execution_id', 'text', (column) => column.notNull())
    .addColumn('step_id', 'text', (column) => column.notNull())
    .addColumn('tool', 'text')
    .addColumn('decision', 'text', (column) => column.notNull())
    .addColumn('source', 'text', (column) => column.notNull())
    .addColumn('decided_by', 'text')
    .addColumn('reason', 'text')
    .addColumn('at', time, (column) => column.notNull())
    .addPrimaryKeyConstraint('approvals_primary_key', ['run_key', 'seq'])
    .modifyEnd(sql`without rowid`)
    .execute();

  const callUsage = usageColumns('usage');
  await db.schema
    .createTable('model_calls')
    .addColumn('run_key', 'integer', (column) => column.notNull().references('runs.key'))
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('step_id', 'text', (column) => column.notNull())
    .addColumn('turn', 'integer', (column) => column.notNull())
    .addColumn('model', 'text', (column) => column.notNull())
    .addColumn('request', 'text')
    .addColumn('request_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addColumn('response', 'text')
    .addColumn('response_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addColumn('usage', 'text')
    .addColumn('prompt_tokens', 'integer', (column) => column.modifyEnd(callUsage.prompt))
    .addColumn('completion_tokens', 'integer', (column) => column.modifyEnd(callUsage.completion))
    .addColumn('total_tokens', 'integer', (column) => column.modifyEnd(callUsage.total))
    .addColumn('latency_ms', 'integer')
    .addColumn('error', 'text')
    .addColumn('at', time, (column) => column.notNull())
    .addPrimaryKeyConstraint('model_calls_primary_key', ['run_key', 'seq'])
    .modifyEnd(sql`without rowid`)
    .execute();
}

/**
 * Tables refer to runs by `run_key` and hold times as epoch milliseconds (both save bytes in every
 * row); each has a view with the run's id and ISO times, for people and tools reading the file.
 */
async function createViews(db: AnyDatabase): Promise<void> {
  const iso = isoTimeSql;
  const views: Record<string, string> = {
    journal: `select r.id as run_id, e.seq, e.type, ${iso('e.at')} as at, e.payload, e.blob_refs, e.packing, e.run_key
      from events e join runs r on r.key = e.run_key`,
    steps_view: `select r.id as run_id, s.step_id, s.first_seq, s.plan_index, s.status, s.attempt, s.tool,
        s.description, s.execution_id, ${iso('s.started_at')} as started_at, ${iso('s.ended_at')} as ended_at,
        s.duration_ms, s.tool_called, s.idempotent, s.output, s.output_sha256, s.error, s.error_code,
        s.error_message, s.usage, s.prompt_tokens, s.completion_tokens, s.total_tokens, s.run_key
      from steps s join runs r on r.key = s.run_key`,
    executions_view: `select x.execution_id, r.id as run_id, x.step_id, x.attempt, x.turn, x.tool, x.effect,
        x.idempotent, x.args, x.args_sha256, x.call_seq, x.result_seq, ${iso('x.started_at')} as started_at,
        ${iso('x.finished_at')} as finished_at, x.status, x.success, x.duration_ms, x.exit_code, x.error,
        x.error_code, x.error_message, x.result, x.result_sha256, x.run_key
      from executions x join runs r on r.key = x.run_key`,
    artifacts_view: `select a.execution_id, a.position, r.id as run_id, a.kind, a.name, a.media_type, a.truncated,
        a.size, a.content, a.content_sha256, a.run_key
      from artifacts a join runs r on r.key = a.run_key`,
    approvals_view: `select r.id as run_id, a.seq, a.execution_id, a.step_id, a.tool, a.decision, a.source,
        a.decided_by, a.reason, ${iso('a.at')} as at, a.run_key
      from approvals a join runs r on r.key = a.run_key`,
    model_calls_view: `select r.id as run_id, m.seq, m.step_id, m.turn, m.model, m.request, m.request_sha256,
        m.response, m.response_sha256, m.usage, m.prompt_tokens, m.completion_tokens, m.total_tokens, m.latency_ms,
        m.error, ${iso('m.at')} as at, m.run_key
      from model_calls m join runs r on r.key = m.run_key`,
  };
  for (const [name, query] of Object.entries(views)) await sql.raw(`create view ${name} as ${query}`).execute(db);
}

/** The code agent's journal (`solve`), queryable in plain SQL (see view-sql). */
const solveViews: Migration = {
  async up(db: AnyDatabase) {
    const views = solveViewQueries((type) => `from events e join runs r on r.key = e.run_key where e.type = '${type}'`);
    for (const [name, query] of Object.entries(views)) await sql.raw(`create view ${name} as ${query}`).execute(db);
    await sql`pragma user_version = 2`.execute(db);
  },
};

/** Every migration, by name (see MIGRATION_NAMES); names sort in the order they run. Forward-only: no `down`. */
export const migrations: Readonly<Record<string, Migration>> = {
  '0001_initial': initial,
  '0002_solve_views': solveViews,
  '0003_journal_rowid': journalRowid,
  '0004_store_metadata': storeMetadata,
  '0005_outputs_in_journal': outputsInJournal,
  '0006_cancel_requests': cancelRequests,
  '0007_live_output': liveOutput,
  '0008_compact_journal': compactJournal,
  '0009_executions_from_journal': executionsFromJournal,
  '0010_event_chunks': eventChunks,
};

/** The in-code provider kysely's Migrator reads. */
export const migrationProvider: MigrationProvider = {
  getMigrations: async () => ({ ...migrations }),
};
