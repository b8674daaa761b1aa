import type { Generated } from 'kysely';

/**
 * The tables of a Stepwise SQLite database, as kysely sees them. `events` is the journal (the
 * source of truth); every other table is a projection written in the same transaction.
 *
 * Columns ending in `_sha256` point into `blobs`: a value larger than the store's
 * `artifactThresholdBytes` is stored there once, and the column beside it is `NULL`.
 */
export interface StoreDatabase {
  readonly events: EventsTable;
  readonly runs: RunsTable;
  readonly steps: StepsTable;
  readonly executions: ExecutionsTable;
  readonly artifacts: ArtifactsTable;
  readonly blobs: BlobsTable;
  readonly approvals: ApprovalsTable;
  readonly model_calls: ModelCallsTable;
}

/** The journal: one row per event, primary key (run_id, seq). */
export interface EventsTable {
  run_id: string;
  seq: number;
  type: string;
  /** ISO 8601 time the event was journaled. */
  at: string;
  /** JSON of the event without run_id, seq, type and at (the columns). */
  payload: string;
  /** JSON `[[path, sha256, "json" | "text"], …]` of values moved to `blobs`; `NULL` for most events. */
  blob_refs: string | null;
}

export interface RunsTable {
  id: string;
  plan_id: string;
  plan_digest: string;
  /** JSON of the plan (or `NULL` and `plan_sha256`). */
  plan: string | null;
  plan_sha256: string | null;
  engine: string;
  goal: string | null;
  /** `running`, or the run-end status: completed | failed | partial | cancelled | paused. */
  status: string;
  /** JSON of the PlanAuthorization. */
  authorization: string | null;
  parent_run_id: string | null;
  /** JSON of the engine options journaled with run-start. */
  options: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  last_seq: number;
  /** JSON TokenUsage. */
  usage: string | null;
  prompt_tokens: Generated<number | null>;
  completion_tokens: Generated<number | null>;
  total_tokens: Generated<number | null>;
  lease_owner: string | null;
  /** The fencing token: grows on every acquisition, kept after release. */
  lease_token: number;
  lease_ttl_ms: number | null;
  lease_expires_at: string | null;
}

export interface StepsTable {
  run_id: string;
  step_id: string;
  /** Seq of the event that introduced the step (run-start for planned steps). */
  first_seq: number;
  /** Index in the plan, for planned steps. */
  plan_index: number | null;
  /** pending | running | retrying | succeeded | failed | skipped | denied | cancelled */
  status: string;
  attempt: number;
  tool: string | null;
  description: string | null;
  execution_id: string | null;
  started_at: string | null;
  ended_at: string | null;
  duration_ms: number | null;
  /** 1 once the current attempt journaled a tool-call. */
  tool_called: number;
  idempotent: number | null;
  /** JSON of the step result's output. */
  output: string | null;
  output_sha256: string | null;
  /** JSON StepError. */
  error: string | null;
  error_code: Generated<string | null>;
  error_message: Generated<string | null>;
  /** JSON TokenUsage of the step's model calls. */
  usage: string | null;
}

export interface ExecutionsTable {
  execution_id: string;
  run_id: string;
  step_id: string;
  attempt: number;
  turn: number | null;
  tool: string;
  effect: string;
  idempotent: number;
  /** JSON of the redacted arguments. */
  args: string | null;
  args_sha256: string | null;
  call_seq: number;
  result_seq: number | null;
  started_at: string;
  finished_at: string | null;
  /** running | succeeded | failed | cancelled */
  status: string;
  /** 1 succeeded, 0 failed or cancelled, `NULL` while running. */
  success: Generated<number | null>;
  duration_ms: number | null;
  exit_code: number | null;
  error: string | null;
  error_code: Generated<string | null>;
  error_message: Generated<string | null>;
  /** JSON of the tool's output. */
  result: string | null;
  result_sha256: string | null;
}

export interface ArtifactsTable {
  execution_id: string;
  position: number;
  run_id: string;
  /** stdout | stderr | diagnostics | result | step_context | … */
  kind: string;
  name: string | null;
  media_type: string | null;
  truncated: number | null;
  /** UTF-8 bytes of the content. */
  size: number;
  content: string | null;
  content_sha256: string | null;
}

/** Large values, content-addressed: stored once however many rows refer to them. */
export interface BlobsTable {
  sha256: string;
  size: number;
  content: string;
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
  at: string;
}

export interface ModelCallsTable {
  run_id: string;
  seq: number;
  step_id: string;
  turn: number;
  model: string;
  request: string | null;
  request_sha256: string | null;
  response: string | null;
  response_sha256: string | null;
  usage: string | null;
  prompt_tokens: Generated<number | null>;
  completion_tokens: Generated<number | null>;
  total_tokens: Generated<number | null>;
  latency_ms: number | null;
  error: string | null;
  at: string;
}
