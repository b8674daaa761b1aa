import type { ColumnType, Generated } from 'kysely';

/** Written as ISO text or `now()`, read back as a Date by `pg`. */
export type StoredTime = ColumnType<Date | string, string | Date, string | Date>;
/** A `json`/`jsonb` column: written as JSON text, read back parsed. */
export type JsonColumn<T = unknown> = ColumnType<T, string, string>;

export interface BlobsTable {
  sha256: string;
  size: number;
  content: string;
}

export interface RunsTable {
  id: string;
  position: Generated<string>;
  plan_id: Generated<string>;
  plan_digest: Generated<string>;
  engine: Generated<string>;
  goal: string | null;
  status: Generated<string>;
  parent_run_id: string | null;
  created_at: StoredTime | null;
  updated_at: StoredTime | null;
  finished_at: StoredTime | null;
  last_seq: Generated<number>;
  step_count: Generated<number>;
  total_tokens: number | null;
  summary: JsonColumn | null;
  lease_owner: string | null;
  lease_token: Generated<number>;
  lease_ttl_ms: number | null;
  lease_expires_at: StoredTime | null;
}

export interface EventsTable {
  run_id: string;
  seq: number;
  type: string;
  at: StoredTime;
  payload: JsonColumn;
  blob_refs: JsonColumn<Record<string, string>> | null;
}

export interface StepsTable {
  run_id: string;
  step_id: string;
  status: string;
  attempt: number;
  tool: string | null;
  execution_id: string | null;
  started_at: StoredTime | null;
  duration_ms: number | null;
  tool_called: boolean;
  idempotent: boolean | null;
  error_code: string | null;
  error_message: string | null;
}

export interface ExecutionsTable {
  execution_id: string;
  run_id: string;
  step_id: string;
  attempt: number;
  turn: number | null;
  tool: string;
  effect: string;
  idempotent: boolean;
  args: JsonColumn | null;
  args_sha256: string | null;
  started_at: StoredTime;
  finished_at: StoredTime | null;
  status: string;
  duration_ms: number | null;
  exit_code: number | null;
  error_code: string | null;
  error_message: string | null;
  output: JsonColumn | null;
  output_sha256: string | null;
}

export interface ApprovalsTable {
  run_id: string;
  seq: number;
  execution_id: string;
  step_id: string;
  tool: string | null;
  decision: string;
  source: string;
  decided_by: string | null;
  reason: string | null;
  at: StoredTime;
}

export interface ModelCallsTable {
  run_id: string;
  seq: number;
  step_id: string;
  turn: number;
  model: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  total_tokens: number | null;
  latency_ms: number | null;
  error_code: string | null;
  at: StoredTime;
}

export interface WorkQueueTable {
  run_id: string;
  queue: string;
  plan: JsonColumn;
  run_options: JsonColumn | null;
  priority: Generated<number>;
  state: Generated<string>;
  enqueued_at: Generated<Date>;
  available_at: ColumnType<Date, string | Date | undefined, string | Date>;
  claimed_by: string | null;
  claim_expires_at: StoredTime | null;
  claims: Generated<number>;
  finished_at: StoredTime | null;
  result_status: string | null;
  last_error: string | null;
}

export interface ToolSlotsTable {
  tool: string;
  slot: number;
  holder: string | null;
  expires_at: StoredTime | null;
}

/** The tables of a Stepwise Postgres schema, for typed kysely queries of your own. */
export interface PostgresStoreDatabase {
  blobs: BlobsTable;
  runs: RunsTable;
  events: EventsTable;
  steps: StepsTable;
  executions: ExecutionsTable;
  approvals: ApprovalsTable;
  model_calls: ModelCallsTable;
  work_queue: WorkQueueTable;
  tool_slots: ToolSlotsTable;
  store_metadata: StoreMetadataTable;
  cancel_requests: CancelRequestsTable;
  live_output: LiveOutputTable;
}

/** The tail of a running call's output per stream, until the call or the run ends. Not part of the journal. */
export interface LiveOutputTable {
  run_id: string;
  execution_id: string;
  stream: string;
  step_id: string;
  text: string;
  total: number;
  updated_at: StoredTime;
}

/** A running (or queued) run someone asked to cancel from another process (`cancelRun`), until its `run-end`. */
export interface CancelRequestsTable {
  run_id: string;
  requested_by: string;
  reason: string | null;
  requested_at: StoredTime;
}

/**
 * Facts about the schema as a whole, one row each. `journal_version`: the journal format the store
 * writes (core's `JOURNAL_VERSION`); a release that reads only older formats refuses the schema (E504).
 */
export interface StoreMetadataTable {
  name: string;
  value: number;
}
