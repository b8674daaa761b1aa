import type { Generated, GeneratedAlways } from 'kysely';

/**
 * The tables of a Stepwise SQLite database, as kysely sees them. `events` is the journal (the
 * source of truth); every other table is a projection written in the same transaction.
 *
 * Other tables refer to a run by `run_key` (`runs.key`), and time columns hold epoch milliseconds
 * (or the ISO text when it is not exactly what `Date#toISOString` writes). The views `runs_view`, `journal`,
 * `steps_view`, `executions_view`, `artifacts_view`, `approvals_view` and `model_calls_view` show
 * them with the run's id and ISO times.
 *
 * Columns ending in `_sha256` point into `blobs`: a value larger than the store's
 * `artifactThresholdBytes` is stored there once, and the column beside it is `NULL`.
 */
export interface StoreDatabase {
  readonly events: EventsTable;
  readonly event_chunks: EventChunksTable;
  readonly runs: RunsTable;
  readonly runs_view: RunsView;
  readonly steps: StepsTable;
  readonly executions: ExecutionsTable;
  readonly artifacts: ArtifactsTable;
  readonly blobs: BlobsTable;
  readonly approvals: ApprovalsTable;
  readonly model_calls: ModelCallsTable;
  readonly store_metadata: StoreMetadataTable;
  readonly cancel_requests: CancelRequestsTable;
  readonly live_output: LiveOutputTable;
}

/** The tail of a running call's output per stream (schema version 7), until the call or the run ends. Not part of the journal. */
export interface LiveOutputTable {
  run_key: number;
  execution_id: string;
  /** `stdout` or `stderr`. */
  stream: string;
  step_id: string;
  /** The last 64 KiB written (redacted). */
  text: string;
  /** Characters written in all. */
  total: number;
  /** ISO 8601. */
  updated_at: string;
}

/**
 * A running run someone asked to cancel from another process (`cancelRun`), until its `run-end`
 * (schema version 6). Not part of the journal: the run's own process journals the cancel.
 */
export interface CancelRequestsTable {
  run_key: number;
  requested_by: string;
  reason: string | null;
  /** ISO 8601. */
  requested_at: string;
}

/**
 * Facts about the file as a whole, one row each. `journal_version`: the journal format the store
 * writes (core's `JOURNAL_VERSION`); a release that reads only older formats refuses the file (E504).
 */
export interface StoreMetadataTable {
  name: string;
  value: number;
}

/** Epoch milliseconds, or ISO 8601 text when that would not round-trip exactly. */
export type StoredTime = number | string;

/** The journal: one row per event, rowid `run_key · 2³² + seq` (one rowid range per run). */
export interface EventsTable {
  /** `run_key · 2³² + seq`. */
  id: number;
  /** `runs.key` of the run (computed from `id`). */
  run_key: GeneratedAlways<number>;
  /** Computed from `id`. */
  seq: GeneratedAlways<number>;
  /**
   * The event type as a small integer for the types the store knows (see `type`), else its text
   * (schema version 8).
   */
  type_code: number | string;
  /** The event type (computed from `type_code`). */
  type: GeneratedAlways<string>;
  /** When the event was journaled. */
  at: StoredTime;
  /** JSON of the event without run_id, seq, type and at (the columns), and without what `packing` says. */
  payload: string;
  /**
   * JSON `[[path, sha256, "json" | "text"], …]` of values moved to `blobs`, and (schema version 10)
   * `[path, first, "json-chunks", count]` for an output whose leading pieces are rows `first` to
   * `first + count − 1` of `event_chunks` (the payload holds the rest of its JSON text at `path`);
   * `NULL` for most events.
   */
  blob_refs: string | null;
  /**
   * 0, or what the payload leaves out because it follows from the row: execution ids derived from
   * run, step and attempt, a step-end result's step id and output, start times held as milliseconds
   * before `at` (see the README's *Packing*).
   */
  packing: number;
  /**
   * The event's hash chain value as 17 bytes (its 22 base64url characters decoded), when it was the
   * event's last key; `NULL` when the payload holds it (rows written before schema version 8).
   */
  chain: Uint8Array | null;
}

/**
 * The leading pieces of large outputs (schema version 10), each `chunkBytes` long (999 bytes at
 * 4 KB pages: four rows fill a page), in the order of their rowids; the event's `blob_refs` names
 * them and its payload holds the rest of the text.
 */
export interface EventChunksTable {
  id: Generated<number>;
  /** The `events` row (`run_key · 2³² + seq`) whose value this is a piece of. */
  event_id: number;
  /** UTF-8 bytes of the value's JSON text (a piece may end inside a character; the rest does not). */
  content: Uint8Array;
}

export interface RunsTable {
  /** The run's integer key, which the other tables hold instead of its id. */
  key: Generated<number>;
  id: string;
  plan_id: string;
  plan_digest: string;
  /** JSON of the plan (or `NULL` and `plan_sha256`). */
  plan: string | null;
  plan_sha256: string | null;
  engine: string;
  goal: string | null;
  /** `running`, or the run-end status: completed | failed | partial | cancelled | waiting. */
  status: string;
  /** JSON of the PlanAuthorization. */
  authorization: string | null;
  parent_run_id: string | null;
  /** JSON of the engine options journaled with run-start. */
  options: string | null;
  created_at: string;
  finished_at: string | null;
  duration_ms: number | null;
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

/** `runs` with the seq and the time (ISO) of the run's last event: 0 and `''` for a run with none. */
export interface RunsView extends RunsTable {
  last_seq: number;
  updated_at: string;
}

export interface StepsTable {
  run_key: number;
  step_id: string;
  /** Seq of the event that introduced the step (run-start for planned steps). */
  first_seq: number;
  /** For planned steps, the index in the plan that added the step (run-start's, or a revision's). */
  plan_index: number | null;
  /** pending | running | retrying | succeeded | failed | skipped | denied | cancelled */
  status: string;
  attempt: number;
  /** The tool of the step's latest start or end; before it starts, the plan's. */
  tool: string | null;
  /** The step's description in the run's current plan. */
  description: string | null;
  execution_id: string | null;
  started_at: StoredTime | null;
  ended_at: StoredTime | null;
  duration_ms: number | null;
  /** 1 once the current attempt journaled a tool-call. */
  tool_called: number;
  idempotent: number | null;
  /** JSON of the step result's output (`NULL` when `output_from_execution`: `steps_view` shows it). */
  output: string | null;
  output_sha256: string | null;
  /** 1: the output is the one its execution's tool-result holds (the row keeps no copy). */
  output_from_execution: Generated<number>;
  /** JSON StepError. */
  error: string | null;
  error_code: Generated<string | null>;
  error_message: Generated<string | null>;
  /** JSON TokenUsage of the step's model calls. */
  usage: string | null;
}

/**
 * One row per tool call (the latest call of an execution id owns it). Since schema version 9 the
 * call's fields (attempt, turn, tool, effect, idempotent, arguments, start) are its `tool-call` event's
 * and the result's (finish, status, duration, error) its `tool-result` event's: `executions_view`
 * shows them.
 */
export interface ExecutionsTable {
  execution_id: string;
  run_key: number;
  step_id: string;
  /** The blob of the arguments when they are large (the tool-call event refers to it too); else `NULL`. */
  args_sha256: string | null;
  call_seq: number;
  result_seq: number | null;
  exit_code: number | null;
  /**
   * JSON of the tool's output when it was written before schema version 5; since then `NULL`: the
   * tool-result event (`result_seq`) holds it, and `executions_view` shows it.
   */
  result: string | null;
  result_sha256: string | null;
}

export interface ArtifactsTable {
  execution_id: string;
  position: number;
  run_key: number;
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
  run_key: number;
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
  run_key: number;
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
  at: StoredTime;
}
