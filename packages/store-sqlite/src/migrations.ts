import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';

const usageColumns = (name: string) => ({
  prompt: sql`generated always as (json_extract(${sql.ref(name)}, '$.promptTokens')) virtual`,
  completion: sql`generated always as (json_extract(${sql.ref(name)}, '$.completionTokens')) virtual`,
  total: sql`generated always as (json_extract(${sql.ref(name)}, '$.totalTokens')) virtual`,
});

const errorCode = sql`generated always as (json_extract(error, '$.code')) virtual`;
const errorMessage = sql`generated always as (json_extract(error, '$.message')) virtual`;

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

const initial: Migration = {
  async up(db: AnyDatabase) {
    await db.schema
      .createTable('blobs')
      .addColumn('sha256', 'text', (column) => column.primaryKey())
      .addColumn('size', 'integer', (column) => column.notNull())
      .addColumn('content', 'text', (column) => column.notNull())
      .execute();

    const runUsage = usageColumns('usage');
    await db.schema
      .createTable('runs')
      .addColumn('id', 'text', (column) => column.primaryKey())
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

    // WITHOUT ROWID: the primary key is the table, so (run_id, seq) is not stored twice.
    await db.schema
      .createTable('events')
      .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
      .addColumn('seq', 'integer', (column) => column.notNull())
      .addColumn('type', 'text', (column) => column.notNull())
      .addColumn('at', 'text', (column) => column.notNull())
      .addColumn('payload', 'text', (column) => column.notNull())
      .addColumn('blob_refs', 'text')
      .addPrimaryKeyConstraint('events_primary_key', ['run_id', 'seq'])
      .modifyEnd(sql`without rowid`)
      .execute();

    const stepUsage = usageColumns('usage');
    await db.schema
      .createTable('steps')
      .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
      .addColumn('step_id', 'text', (column) => column.notNull())
      .addColumn('first_seq', 'integer', (column) => column.notNull())
      .addColumn('plan_index', 'integer')
      .addColumn('status', 'text', (column) => column.notNull())
      .addColumn('attempt', 'integer', (column) => column.notNull())
      .addColumn('tool', 'text')
      .addColumn('description', 'text')
      .addColumn('execution_id', 'text')
      .addColumn('started_at', 'text')
      .addColumn('ended_at', 'text')
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
      .addPrimaryKeyConstraint('steps_primary_key', ['run_id', 'step_id'])
      .modifyEnd(sql`without rowid`)
      .execute();

    await db.schema
      .createTable('executions')
      .addColumn('execution_id', 'text', (column) => column.primaryKey())
      .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
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
      .addColumn('started_at', 'text', (column) => column.notNull())
      .addColumn('finished_at', 'text')
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
      .columns(['run_id', 'step_id', 'call_seq'])
      .execute();

    await db.schema
      .createTable('artifacts')
      .addColumn('execution_id', 'text', (column) => column.notNull().references('executions.execution_id'))
      .addColumn('position', 'integer', (column) => column.notNull())
      .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
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

    await db.schema
      .createTable('approvals')
      .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
      .addColumn('seq', 'integer', (column) => column.notNull())
      .addColumn('execution_id', 'text', (column) => column.notNull())
      .addColumn('step_id', 'text', (column) => column.notNull())
      .addColumn('tool', 'text')
      .addColumn('decision', 'text', (column) => column.notNull())
      .addColumn('source', 'text', (column) => column.notNull())
      .addColumn('decided_by', 'text')
      .addColumn('reason', 'text')
      .addColumn('at', 'text', (column) => column.notNull())
      .addPrimaryKeyConstraint('approvals_primary_key', ['run_id', 'seq'])
      .modifyEnd(sql`without rowid`)
      .execute();

    const callUsage = usageColumns('usage');
    await db.schema
      .createTable('model_calls')
      .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
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
      .addColumn('at', 'text', (column) => column.notNull())
      .addPrimaryKeyConstraint('model_calls_primary_key', ['run_id', 'seq'])
      .modifyEnd(sql`without rowid`)
      .execute();

    // For tools without kysely: `PRAGMA user_version` tells the schema version too.
    await sql`pragma user_version = 1`.execute(db);
  },
};

/** Every migration, by name (see MIGRATION_NAMES); names sort in the order they run. Forward-only: no `down`. */
export const migrations: Readonly<Record<string, Migration>> = {
  '0001_initial': initial,
};

/** The in-code provider kysely's Migrator reads. */
export const migrationProvider: MigrationProvider = {
  getMigrations: async () => ({ ...migrations }),
};
