import {
  type Artifact,
  addUsage,
  checkBatch,
  checkLease,
  ErrorCodes,
  exitCodeOf,
  type Lease,
  type RunEvent,
  type Step,
  StepwiseError,
  type TokenUsage,
  type ToolResultEvent,
} from '@stepwise/core';
import type Database from 'better-sqlite3';
import { type Bindable, json, scalar } from './bind-values.js';
import { type BlobWriter, type Encoded, encodeEvent } from './blob-codec.js';
import { heldLease, type LeaseColumns } from './run-leases.js';
import { encodeOptionalTime, encodeTime } from './time-codec.js';
import { lastSeqOf, RUN_KEY_SHIFT } from './view-sql.js';

interface RunRow extends LeaseColumns {
  readonly key: number;
  readonly last_seq: number;
  readonly status: string;
  readonly finished_at: string | null;
  readonly duration_ms: number | null;
  readonly usage: string | null;
}

/** Run-level columns a batch may change; written back once, at the end of the batch. */
interface RunState {
  status: unknown;
  finishedAt: string | null;
  durationMs: unknown;
  usage: TokenUsage | undefined;
  changed: boolean;
}

/** A `steps` row while a batch changes it (the columns `run-start` owns are left alone). */
interface StepRow {
  first_seq: number;
  status: Bindable;
  attempt: Bindable;
  tool: Bindable;
  execution_id: Bindable;
  started_at: Bindable;
  ended_at: Bindable;
  duration_ms: Bindable;
  tool_called: number;
  idempotent: Bindable;
  output: string | null;
  output_sha256: string | null;
  error: string | null;
  usage: string | null;
  /**
   * Whether the row was read from the table. A step whose batch begins with its `step-start` is not
   * read (the start resets every column but `first_seq` and `usage`): it is written with an
   * update that leaves those two alone, or inserted if the step has no row yet.
   */
  loaded: boolean;
}

const STEP_COLUMNS = [
  'first_seq',
  'status',
  'attempt',
  'tool',
  'execution_id',
  'started_at',
  'ended_at',
  'duration_ms',
  'tool_called',
  'idempotent',
  'output',
  'output_sha256',
  'error',
  'usage',
] as const;

/** An `executions` row journaled in this batch (its tool-call is in the batch). */
interface ExecutionRow {
  step_id: string;
  attempt: Bindable;
  turn: Bindable;
  tool: Bindable;
  effect: Bindable;
  idempotent: Bindable;
  args: Encoded;
  call_seq: number;
  started_at: Bindable;
  result_seq: number | null;
  finished_at: Bindable;
  status: Bindable;
  duration_ms: Bindable;
  exit_code: Bindable;
  error: string | null;
  result: Encoded;
  artifacts: readonly Artifact[];
}

const NO_VALUE: Encoded = { text: null, sha256: null };

/** A step with no row yet (or, `loaded` false, one not read: see StepRow.loaded). */
function newStepRow(seq: number, loaded: boolean): StepRow {
  return {
    first_seq: seq,
    status: 'pending',
    attempt: 0,
    tool: null,
    execution_id: null,
    started_at: null,
    ended_at: null,
    duration_ms: null,
    tool_called: 0,
    idempotent: null,
    output: null,
    output_sha256: null,
    error: null,
    usage: null,
    loaded,
  };
}

/**
 * Appends batches: the seq and lease checks, the journal rows, and every projection the events
 * change, mirroring core's `applyEvent` one event at a time. A step's or an execution's row is
 * changed in memory by all events of the batch and written once: one row write per step, not one
 * per event. Runs inside the caller's transaction, synchronously, with prepared statements.
 */
export class JournalWriter {
  readonly #blobs: BlobWriter;
  readonly #statements: ReturnType<typeof prepareStatements>;

  constructor(sqlite: Database.Database, blobs: BlobWriter) {
    this.#blobs = blobs;
    this.#statements = prepareStatements(sqlite);
  }

  /** The whole batch; call inside one IMMEDIATE transaction. Throws E502/E501 before writing. */
  append(runId: string, events: readonly RunEvent[], lease: Lease | undefined, now: number): void {
    const statements = this.#statements;
    this.#blobs.reset();
    const row = statements.selectRun.get(runId);
    checkBatch(runId, row?.last_seq ?? 0, events);
    checkSeqRange(runId, events);
    checkLease(runId, heldLease(runId, row), lease, now);
    const runKey = row ? row.key : Number(statements.insertRun.run(runId).lastInsertRowid);
    const batch = new Batch(runKey, statements, this.#blobs, {
      status: row?.status ?? 'running',
      finishedAt: row?.finished_at ?? null,
      durationMs: row?.duration_ms ?? null,
      usage: row?.usage ? (JSON.parse(row.usage) as TokenUsage) : undefined,
      changed: false,
    });
    for (const event of events) {
      const encoded = encodeEvent(runId, event, this.#blobs);
      statements.insertEvent.run(
        runKey,
        event.seq,
        event.type,
        encodeTime(event.at),
        encoded.payload,
        encoded.blobRefs,
        encoded.packing,
      );
      batch.apply(event);
    }
    batch.finish();
  }
}

/** An event's rowid holds its seq in 32 bits (see view-sql): a run has at most 2³² − 1 events. */
function checkSeqRange(runId: string, events: readonly RunEvent[]): void {
  const last = events.length - 1;
  if ((events[last] as RunEvent).seq < RUN_KEY_SHIFT) return;
  throw new StepwiseError(
    ErrorCodes.INPUT_INVALID,
    `run ${runId}: the SQLite store holds at most ${RUN_KEY_SHIFT - 1} events per run`,
    { location: `events[${last}].seq` },
  );
}

function prepareStatements(sqlite: Database.Database) {
  const stepAssignments = STEP_COLUMNS.filter((column) => column !== 'first_seq')
    .map((column) => `${column} = excluded.${column}`)
    .join(', ');
  return {
    selectRun: sqlite.prepare<[string], RunRow>(
      `select key, ${lastSeqOf('r')} as last_seq, status, finished_at,
         duration_ms, usage, lease_owner, lease_token, lease_ttl_ms, lease_expires_at
       from runs r where id = ?`,
    ),
    insertRun: sqlite.prepare('insert into runs (id) values (?)'),
    updateRunStart: sqlite.prepare(
      `update runs set plan_id = ?, plan_digest = ?, plan = ?, plan_sha256 = ?, engine = ?, goal = ?, authorization = ?,
       parent_run_id = ?, options = ?, created_at = ? where key = ?`,
    ),
    updateRunPlan: sqlite.prepare(
      `update runs set plan_digest = ?, plan = ?, plan_sha256 = ?, goal = ?, authorization = coalesce(?, authorization)
       where key = ?`,
    ),
    updateRunAuthorization: sqlite.prepare('update runs set authorization = ? where key = ?'),
    deletePendingStep: sqlite.prepare("delete from steps where run_key = ? and step_id = ? and status = 'pending'"),
    upsertRevisedStep: sqlite.prepare(
      `insert into steps (run_key, step_id, first_seq, plan_index, status, attempt, tool, description)
       values (?, ?, ?, ?, 'pending', 0, ?, ?)
       on conflict (run_key, step_id) do update set plan_index = excluded.plan_index, tool = coalesce(steps.tool, excluded.tool),
         description = excluded.description`,
    ),
    updateRunState: sqlite.prepare(
      'update runs set status = ?, finished_at = ?, duration_ms = ?, usage = ? where key = ?',
    ),
    insertEvent: sqlite.prepare(
      `insert into events (id, type, at, payload, blob_refs, packing) values (? * ${RUN_KEY_SHIFT} + ?, ?, ?, ?, ?, ?)`,
    ),
    clearDescriptions: sqlite.prepare(
      'update steps set description = null where run_key = ? and description is not null',
    ),
    upsertPlanStep: sqlite.prepare(
      `insert into steps (run_key, step_id, first_seq, plan_index, status, attempt, tool, description)
       values (?, ?, ?, ?, 'pending', 0, ?, ?)
       on conflict (run_key, step_id) do update set description = excluded.description`,
    ),
    selectStep: sqlite.prepare<[number, string], Omit<StepRow, 'loaded'>>(
      `select ${STEP_COLUMNS.join(', ')} from steps where run_key = ? and step_id = ?`,
    ),
    // A started step's row, unread (see StepRow.loaded): every column the start resets; the tool only when known.
    updateStartedStep: sqlite.prepare(
      `update steps set status = ?, attempt = ?, tool = coalesce(?, tool), execution_id = ?, started_at = ?,
         ended_at = ?, duration_ms = ?, tool_called = ?, idempotent = ?, output = ?, output_sha256 = ?, error = ?
       where run_key = ? and step_id = ?`,
    ),
    upsertStep: sqlite.prepare(
      `insert into steps (run_key, step_id, ${STEP_COLUMNS.join(', ')})
       values (?, ?, ${STEP_COLUMNS.map(() => '?').join(', ')})
       on conflict (run_key, step_id) do update set ${stepAssignments}`,
    ),
    upsertExecution: sqlite.prepare(
      `insert into executions (execution_id, run_key, step_id, attempt, turn, tool, effect, idempotent, args,
         args_sha256, call_seq, result_seq, started_at, finished_at, status, duration_ms, exit_code, error, result,
         result_sha256)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (execution_id) do update set run_key = excluded.run_key, step_id = excluded.step_id,
         attempt = excluded.attempt, turn = excluded.turn, tool = excluded.tool, effect = excluded.effect,
         idempotent = excluded.idempotent, args = excluded.args, args_sha256 = excluded.args_sha256,
         call_seq = excluded.call_seq, result_seq = excluded.result_seq, started_at = excluded.started_at,
         finished_at = excluded.finished_at, status = excluded.status, duration_ms = excluded.duration_ms,
         exit_code = excluded.exit_code, error = excluded.error, result = excluded.result,
         result_sha256 = excluded.result_sha256`,
    ),
    updateExecutionResult: sqlite.prepare(
      `update executions set result_seq = ?, finished_at = ?, status = ?, duration_ms = ?, exit_code = ?, error = ?,
         result = ?, result_sha256 = ?
       where execution_id = ? and run_key = ?`,
    ),
    insertArtifact: sqlite.prepare(
      `insert into artifacts (execution_id, position, run_key, kind, name, media_type, truncated, size, content,
         content_sha256)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertApproval: sqlite.prepare(
      `insert into approvals (run_key, seq, execution_id, step_id, tool, decision, source, decided_by, reason, at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertModelCall: sqlite.prepare(
      `insert into model_calls (run_key, seq, step_id, turn, model, request, request_sha256, response, response_sha256,
         usage, latency_ms, error, at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/** One batch's projection changes, mirroring `applyEvent`. */
class Batch {
  readonly #runKey: number;
  readonly #statements: Statements;
  readonly #blobs: BlobWriter;
  readonly #run: RunState;
  readonly #steps = new Map<string, StepRow>();
  readonly #executions = new Map<string, ExecutionRow>();

  constructor(runKey: number, statements: Statements, blobs: BlobWriter, run: RunState) {
    this.#runKey = runKey;
    this.#statements = statements;
    this.#blobs = blobs;
    this.#run = run;
  }

  /** The step's row as the fold's `stepOf` would find or create it (read from the table unless `started`). */
  #step(stepId: string, seq: number, started = false): StepRow {
    let step = this.#steps.get(stepId);
    if (!step) {
      const row = started ? undefined : this.#statements.selectStep.get(this.#runKey, stepId);
      step = row ? { ...row, loaded: true } : newStepRow(seq, !started);
      this.#steps.set(stepId, step);
    }
    return step;
  }

  /** Reads what an unread row left alone (`first_seq`, `usage`): a model call adds to the usage. */
  #load(step: StepRow, stepId: string): void {
    if (step.loaded) return;
    const row = this.#statements.selectStep.get(this.#runKey, stepId);
    if (row) {
      step.first_seq = row.first_seq;
      step.usage = row.usage;
    }
    step.loaded = true;
  }

  apply(event: RunEvent): void {
    switch (event.type) {
      case 'run-start':
        this.#startRun(event);
        break;
      case 'run-resume':
        this.#run.status = 'running';
        this.#run.finishedAt = null;
        this.#run.changed = true;
        if (event.authorization) this.#statements.updateRunAuthorization.run(json(event.authorization), this.#runKey);
        break;
      case 'plan-revise':
        this.#reviseRun(event);
        break;
      case 'step-start':
        this.#startStep(event);
        break;
      case 'tool-call':
        this.#recordCall(event);
        break;
      case 'tool-result':
        this.#step(event.stepId, event.seq);
        this.#recordResult(event);
        break;
      case 'approval-decision':
        this.#recordApproval(event);
        break;
      case 'step-retry':
        this.#step(event.stepId, event.seq).status = 'retrying';
        break;
      case 'model-call':
        this.#recordModelCall(event);
        break;
      case 'step-end':
        this.#endStep(event);
        break;
      case 'run-end':
        this.#run.status = event.status;
        this.#run.finishedAt = event.at;
        this.#run.durationMs = event.durationMs;
        if (event.usage) this.#run.usage = event.usage;
        this.#run.changed = true;
        break;
      default:
        // progress-report, approval-request, recovery-decision, limit-reach: the journal is their record.
        break;
    }
  }

  #startStep(event: Extract<RunEvent, { type: 'step-start' }>): void {
    const step = this.#step(event.stepId, event.seq, true);
    step.status = 'running';
    step.attempt = scalar(event.attempt);
    if (event.tool !== undefined) step.tool = scalar(event.tool);
    step.execution_id = scalar(event.executionId);
    step.started_at = encodeTime(event.at);
    step.ended_at = null;
    step.duration_ms = null;
    step.tool_called = 0;
    step.idempotent = null;
    step.output = null;
    step.output_sha256 = null;
    step.error = null;
  }

  #recordCall(event: Extract<RunEvent, { type: 'tool-call' }>): void {
    const step = this.#step(event.stepId, event.seq);
    step.tool_called = 1;
    step.idempotent = step.idempotent === 0 ? 0 : scalar(event.idempotent);
    this.#executions.set(event.executionId, {
      step_id: event.stepId,
      attempt: scalar(event.attempt),
      turn: scalar(event.turn),
      tool: scalar(event.tool),
      effect: scalar(event.effect),
      idempotent: scalar(event.idempotent),
      args: this.#blobs.json(event.args),
      call_seq: event.seq,
      started_at: encodeTime(event.at),
      result_seq: null,
      finished_at: null,
      status: 'running',
      duration_ms: null,
      exit_code: null,
      error: null,
      result: NO_VALUE,
      artifacts: [],
    });
  }

  #recordApproval(event: Extract<RunEvent, { type: 'approval-decision' }>): void {
    this.#statements.insertApproval.run(
      this.#runKey,
      event.seq,
      event.executionId,
      event.stepId,
      scalar(event.tool),
      scalar(event.decision),
      scalar(event.source),
      scalar(event.by),
      scalar(event.reason),
      encodeTime(event.at),
    );
  }

  #recordModelCall(event: Extract<RunEvent, { type: 'model-call' }>): void {
    const request = this.#blobs.json(event.request);
    const response = this.#blobs.json(event.response);
    this.#statements.insertModelCall.run(
      this.#runKey,
      event.seq,
      event.stepId,
      scalar(event.turn),
      scalar(event.model),
      request.text,
      request.sha256,
      response.text,
      response.sha256,
      json(event.usage),
      scalar(event.latencyMs),
      json(event.error),
      encodeTime(event.at),
    );
    const step = this.#step(event.stepId, event.seq);
    this.#load(step, event.stepId);
    step.usage = json(addUsage(step.usage ? (JSON.parse(step.usage) as TokenUsage) : undefined, event.usage));
    const usage = addUsage(this.#run.usage, event.usage);
    if (usage !== this.#run.usage) {
      this.#run.usage = usage;
      this.#run.changed = true;
    }
  }

  #endStep(event: Extract<RunEvent, { type: 'step-end' }>): void {
    const result = event.result;
    const step = this.#step(event.stepId, event.seq);
    const output = this.#blobs.json(result.output);
    step.status = scalar(result.status);
    step.attempt = scalar(result.attempt);
    if (result.tool !== undefined) step.tool = scalar(result.tool);
    step.execution_id = scalar(result.executionId);
    step.started_at = encodeOptionalTime(scalar(result.startedAt));
    step.ended_at = encodeTime(event.at);
    step.duration_ms = scalar(result.durationMs);
    step.output = output.text;
    step.output_sha256 = output.sha256;
    step.error = json(result.error);
  }

  #startRun(event: Extract<RunEvent, { type: 'run-start' }>): void {
    // Plan steps are written directly; pending in-memory rows go first so nothing is overwritten.
    this.#writeSteps();
    const statements = this.#statements;
    const plan = this.#blobs.json(event.plan);
    statements.updateRunStart.run(
      scalar(event.planId),
      scalar(event.planDigest),
      plan.text,
      plan.sha256,
      scalar(event.engine),
      scalar(event.plan.goal),
      json(event.authorization),
      scalar(event.parentRunId),
      json(event.options),
      event.at,
      this.#runKey,
    );
    statements.clearDescriptions.run(this.#runKey);
    this.#upsertPlanSteps(statements.upsertPlanStep, event.plan.steps, event.seq);
  }

  /** One pending row per plan step (a row that exists keeps its state; `upsert` says what it updates). */
  #upsertPlanSteps(upsert: Database.Statement, steps: readonly Step[], seq: number): void {
    const seen = new Set<string>();
    steps.forEach((step, index) => {
      // The fold's `find` takes the first step with an id; later duplicates change nothing.
      if (seen.has(step.id)) return;
      seen.add(step.id);
      upsert.run(this.#runKey, step.id, seq, index, scalar(step.tool), scalar(step.description));
    });
  }

  /** The revision becomes the run's plan: steps it removed before they started leave, new ones are pending. */
  #reviseRun(event: Extract<RunEvent, { type: 'plan-revise' }>): void {
    this.#writeSteps();
    const statements = this.#statements;
    const plan = this.#blobs.json(event.plan);
    statements.updateRunPlan.run(
      scalar(event.digest),
      plan.text,
      plan.sha256,
      scalar(event.plan.goal),
      json(event.authorization),
      this.#runKey,
    );
    for (const change of event.diff) {
      if (change.kind === 'step-removed') statements.deletePendingStep.run(this.#runKey, change.stepId);
    }
    this.#upsertPlanSteps(statements.upsertRevisedStep, event.plan.steps, event.seq);
  }

  #recordResult(event: ToolResultEvent): void {
    const output = this.#blobs.json(event.output);
    const pending = this.#executions.get(event.executionId);
    if (pending) {
      pending.result_seq = event.seq;
      pending.finished_at = encodeTime(event.at);
      pending.status = scalar(event.status);
      pending.duration_ms = scalar(event.durationMs);
      pending.exit_code = scalar(exitCodeOf(event.output, event.error));
      pending.error = json(event.error);
      pending.result = output;
      pending.artifacts = event.artifacts ?? [];
      return;
    }
    // The fold ignores a result whose call it never saw in this run: so does the update.
    const changed = this.#statements.updateExecutionResult.run(
      event.seq,
      encodeTime(event.at),
      scalar(event.status),
      scalar(event.durationMs),
      scalar(exitCodeOf(event.output, event.error)),
      json(event.error),
      output.text,
      output.sha256,
      event.executionId,
      this.#runKey,
    ).changes;
    if (changed > 0) this.#writeArtifacts(event.executionId, event.artifacts ?? []);
  }

  #writeArtifacts(executionId: string, artifacts: readonly Artifact[]): void {
    artifacts.forEach((artifact, position) => {
      const content = typeof artifact.content === 'string' ? artifact.content : (json(artifact.content) ?? '');
      const stored = this.#blobs.text(content);
      this.#statements.insertArtifact.run(
        executionId,
        position,
        this.#runKey,
        scalar(artifact.kind),
        scalar(artifact.name),
        scalar(artifact.mediaType),
        scalar(artifact.truncated),
        Buffer.byteLength(content, 'utf8'),
        stored.text,
        stored.sha256,
      );
    });
  }

  #writeSteps(): void {
    for (const [stepId, step] of this.#steps) {
      if (!step.loaded && this.#updateStarted(stepId, step)) continue;
      this.#statements.upsertStep.run(
        this.#runKey,
        stepId,
        step.first_seq,
        step.status,
        step.attempt,
        step.tool,
        step.execution_id,
        step.started_at,
        step.ended_at,
        step.duration_ms,
        step.tool_called,
        step.idempotent,
        step.output,
        step.output_sha256,
        step.error,
        step.usage,
      );
    }
    this.#steps.clear();
  }

  /** Writes an unread started row over the existing one; false when the step has no row yet. */
  #updateStarted(stepId: string, step: StepRow): boolean {
    const changed = this.#statements.updateStartedStep.run(
      step.status,
      step.attempt,
      step.tool,
      step.execution_id,
      step.started_at,
      step.ended_at,
      step.duration_ms,
      step.tool_called,
      step.idempotent,
      step.output,
      step.output_sha256,
      step.error,
      this.#runKey,
      stepId,
    ).changes;
    return changed > 0;
  }

  /** Writes every row the batch changed, the run's row only when its state changed (its last seq and time are the journal's: see runs_view). */
  finish(): void {
    this.#writeSteps();
    for (const [executionId, execution] of this.#executions) {
      this.#statements.upsertExecution.run(
        executionId,
        this.#runKey,
        execution.step_id,
        execution.attempt,
        execution.turn,
        execution.tool,
        execution.effect,
        execution.idempotent,
        execution.args.text,
        execution.args.sha256,
        execution.call_seq,
        execution.result_seq,
        execution.started_at,
        execution.finished_at,
        execution.status,
        execution.duration_ms,
        execution.exit_code,
        execution.error,
        execution.result.text,
        execution.result.sha256,
      );
      this.#writeArtifacts(executionId, execution.artifacts);
    }
    const run = this.#run;
    if (run.changed) {
      this.#statements.updateRunState.run(
        scalar(run.status),
        run.finishedAt,
        scalar(run.durationMs),
        json(run.usage),
        this.#runKey,
      );
    }
  }
}
