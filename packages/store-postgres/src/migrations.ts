import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is.
type AnyDatabase = Kysely<any>;

async function createJournalTables(db: AnyDatabase): Promise<void> {
  // Large values (plans, arguments, outputs, artifacts, model requests) live here once, by content hash.
  await db.schema
    .createTable('blobs')
    .addColumn('sha256', 'text', (column) => column.primaryKey())
    .addColumn('size', 'integer', (column) => column.notNull())
    .addColumn('content', 'text', (column) => column.notNull())
    .execute();

  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (column) => column.primaryKey())
    // Ties on created_at list in the order runs were first written.
    .addColumn('position', 'bigint', (column) => column.generatedAlwaysAsIdentity())
    .addColumn('plan_id', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('plan_digest', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('engine', 'text', (column) => column.notNull().defaultTo(''))
    .addColumn('goal', 'text')
    .addColumn('status', 'text', (column) => column.notNull().defaultTo('running'))
    .addColumn('parent_run_id', 'text')
    .addColumn('created_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .addColumn('last_seq', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('step_count', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('total_tokens', 'integer')
    // The RunSummary exactly as getRun returns it: core's fold wrote it.
    .addColumn('summary', 'jsonb')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_token', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('lease_ttl_ms', 'integer')
    .addColumn('lease_expires_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('runs_created_at').on('runs').columns(['created_at', 'position']).execute();
  await db.schema.createIndex('runs_status_created_at').on('runs').columns(['status', 'created_at']).execute();

  await db.schema
    .createTable('events')
    .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('type', 'text', (column) => column.notNull())
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    // `json`, not `jsonb`: kept as written (jsonb refuses \u0000, which tool output may hold).
    .addColumn('payload', 'json', (column) => column.notNull())
    // Fields moved to `blobs`: { field: sha256 }.
    .addColumn('blob_refs', 'jsonb')
    .addPrimaryKeyConstraint('events_primary_key', ['run_id', 'seq'])
    .execute();
}

async function createProjectionTables(db: AnyDatabase): Promise<void> {
  await db.schema
    .createTable('steps')
    .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
    .addColumn('step_id', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('attempt', 'integer', (column) => column.notNull())
    .addColumn('tool', 'text')
    .addColumn('execution_id', 'text')
    .addColumn('started_at', 'timestamptz')
    .addColumn('duration_ms', 'integer')
    .addColumn('tool_called', 'boolean', (column) => column.notNull().defaultTo(false))
    .addColumn('idempotent', 'boolean')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addPrimaryKeyConstraint('steps_primary_key', ['run_id', 'step_id'])
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
    .addColumn('idempotent', 'boolean', (column) => column.notNull())
    .addColumn('args', 'json')
    .addColumn('args_sha256', 'text', (column) => column.references('blobs.sha256'))
    .addColumn('started_at', 'timestamptz', (column) => column.notNull())
    .addColumn('finished_at', 'timestamptz')
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('duration_ms', 'integer')
    .addColumn('exit_code', 'integer')
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('output', 'json')
    .addColumn('output_sha256', 'text', (column) => column.references('blobs.sha256'))
    .execute();
  await db.schema.createIndex('executions_run_step').on('executions').columns(['run_id', 'step_id']).execute();

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
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    .addPrimaryKeyConstraint('approvals_primary_key', ['run_id', 'seq'])
    .execute();

  await db.schema
    .createTable('model_calls')
    .addColumn('run_id', 'text', (column) => column.notNull().references('runs.id'))
    .addColumn('seq', 'integer', (column) => column.notNull())
    .addColumn('step_id', 'text', (column) => column.notNull())
    .addColumn('turn', 'integer', (column) => column.notNull())
    .addColumn('model', 'text', (column) => column.notNull())
    .addColumn('prompt_tokens', 'integer')
    .addColumn('completion_tokens', 'integer')
    .addColumn('total_tokens', 'integer')
    .addColumn('latency_ms', 'integer')
    .addColumn('error_code', 'text')
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    .addPrimaryKeyConstraint('model_calls_primary_key', ['run_id', 'seq'])
    .execute();
}

async function createWorkTables(db: AnyDatabase): Promise<void> {
  // Runs waiting for a worker, or held by one until `claim_expires_at`.
  await db.schema
    .createTable('work_queue')
    .addColumn('run_id', 'text', (column) => column.primaryKey())
    .addColumn('queue', 'text', (column) => column.notNull())
    .addColumn('plan', 'json', (column) => column.notNull())
    .addColumn('run_options', 'json')
    .addColumn('priority', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('state', 'text', (column) => column.notNull().defaultTo('queued'))
    .addColumn('enqueued_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .addColumn('available_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .addColumn('claimed_by', 'text')
    .addColumn('claim_expires_at', 'timestamptz')
    .addColumn('claims', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('result_status', 'text')
    .addColumn('last_error', 'text')
    .execute();
  await db.schema
    .createIndex('work_queue_waiting')
    .on('work_queue')
    .columns(['queue', 'state', 'priority', 'enqueued_at'])
    .execute();

  // Cluster-wide concurrency per tool: a tool call holds one slot row until it ends or its claim expires.
  await db.schema
    .createTable('tool_slots')
    .addColumn('tool', 'text', (column) => column.notNull())
    .addColumn('slot', 'integer', (column) => column.notNull())
    .addColumn('holder', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addPrimaryKeyConstraint('tool_slots_primary_key', ['tool', 'slot'])
    .execute();
}

/** Views that read like the audit questions: who ran what, when, with what result, and why. */
async function createViews(db: AnyDatabase): Promise<void> {
  await sql`create view journal as
    select e.run_id, e.seq, e.type, e.at, e.payload, e.blob_refs from events e`.execute(db);
  await sql`create view executions_view as
    select x.execution_id, x.run_id, r.plan_id, r.goal, x.step_id, x.attempt, x.turn, x.tool, x.effect,
      x.idempotent, x.args, x.args_sha256, x.started_at, x.finished_at, x.status,
      case x.status when 'succeeded' then true when 'running' then null else false end as success,
      x.duration_ms, x.exit_code, x.error_code, x.error_message, x.output, x.output_sha256
    from executions x join runs r on r.id = x.run_id`.execute(db);
  await sql`create view workers_view as
    select claimed_by as worker, queue, count(*) as runs, min(claim_expires_at) as earliest_expiry,
      bool_or(claim_expires_at < now()) as has_expired_claims
    from work_queue where state = 'claimed' group by claimed_by, queue`.execute(db);
}

const initial = (schema: string): Migration => ({
  async up(db: AnyDatabase) {
    // kysely runs each Postgres migration in a transaction: unqualified names below land in `schema`.
    await sql`set local search_path to ${sql.id(schema)}`.execute(db);
    await createJournalTables(db);
    await createProjectionTables(db);
    await createWorkTables(db);
    await createViews(db);
  },
});

/**
 * The code agent's journal (`solve`), queryable in plain SQL: one row per implementation attempt,
 * per validation (its output read back from `blobs` when it was stored there) and per rollback.
 */
const solveViews = (schema: string): Migration => ({
  async up(db: AnyDatabase) {
    await sql`set local search_path to ${sql.id(schema)}`.execute(db);
    await sql`create view attempts as
      select e.run_id, e.seq, e.at, e.payload->>'stepId' as step_id, (e.payload->>'attempt')::integer as attempt,
        e.payload->>'implementationRunId' as implementation_run_id, e.payload->>'status' as status,
        e.payload->>'error' as error, (e.payload->>'rolledBack')::boolean as rolled_back, e.payload->'changes' as changes
      from events e where e.type = 'attempt-end'`.execute(db);
    await sql`create view validations as
      select e.run_id, e.seq, e.at, e.payload->>'stepId' as step_id, (e.payload->>'attempt')::integer as attempt,
        e.payload->>'validationRunId' as validation_run_id, e.payload->'command' as command,
        (e.payload->>'exitCode')::integer as exit_code, (e.payload->>'passed')::boolean as passed,
        e.payload->'failingTests' as failing_tests, json_array_length(e.payload->'failingTests') as failing_count,
        coalesce(e.payload->>'output',
          (select b.content::json #>> '{}' from blobs b where b.sha256 = e.blob_refs->>'output')) as output,
        e.payload->>'error' as error
      from events e where e.type = 'validation-end'`.execute(db);
    await sql`create view rollbacks as
      select e.run_id, e.seq, e.at, e.payload->>'stepId' as step_id, (e.payload->>'attempt')::integer as attempt,
        e.payload->'restored' as restored, e.payload->'removed' as removed
      from events e where e.type = 'workspace-rollback'`.execute(db);
  },
});

/**
 * `store_metadata`: facts about the schema as a whole. `journal_version` is the journal format the
 * store writes (core's `JOURNAL_VERSION`): a release that writes a newer one raises it in a migration
 * of its own, and an older release then refuses the schema (E504). Journals written before the row
 * existed are format 1.
 */
const storeMetadata = (schema: string): Migration => ({
  async up(db: AnyDatabase) {
    await sql`set local search_path to ${sql.id(schema)}`.execute(db);
    await sql`create table store_metadata (name text primary key, value integer not null)`.execute(db);
    await sql`insert into store_metadata (name, value) values ('journal_version', 1)`.execute(db);
  },
});

/**
 * `cancel_requests`: a request to cancel a running run from another process (`cancelRun`), until the
 * run's `run-end`. Keyed by run id without a reference to `runs`: a run still in `work_queue` has no
 * row there yet, and the worker that claims it sees the request with its first lease.
 */
const cancelRequests = (schema: string): Migration => ({
  async up(db: AnyDatabase) {
    await sql`set local search_path to ${sql.id(schema)}`.execute(db);
    await sql`create table cancel_requests (run_id text primary key, requested_by text not null, reason text,
      requested_at timestamptz not null)`.execute(db);
  },
});

/**
 * `live_output`: the tail of each running call's output per stream, upserted by the process running
 * it outside the journal's transactions, so another process can show it. Not part of the journal.
 */
const liveOutput = (schema: string): Migration => ({
  async up(db: AnyDatabase) {
    await sql`set local search_path to ${sql.id(schema)}`.execute(db);
    await sql`create table live_output (run_id text not null, execution_id text not null, stream text not null,
      step_id text not null, text text not null, total integer not null, updated_at timestamptz not null,
      primary key (run_id, execution_id, stream))`.execute(db);
  },
});

/** Every migration of a store in `schema`, by name; names sort in the order they run. Forward-only: no `down`. */
export function migrations(schema: string): Readonly<Record<string, Migration>> {
  return {
    '0001_initial': initial(schema),
    '0002_solve_views': solveViews(schema),
    '0003_store_metadata': storeMetadata(schema),
    '0004_cancel_requests': cancelRequests(schema),
    '0005_live_output': liveOutput(schema),
  };
}

export function migrationProvider(schema: string): MigrationProvider {
  return { getMigrations: async () => ({ ...migrations(schema) }) };
}

export const MIGRATION_TABLE = 'stepwise_migrations';
export const MIGRATION_LOCK_TABLE = 'stepwise_migrations_lock';
