import {
  addUsage,
  checkBatch,
  checkLease,
  exitCodeOf,
  type Lease,
  type RunEvent,
  type StepResult,
  type TokenUsage,
} from '@stepwise/core';
import type Database from 'better-sqlite3';
import { type BlobWriter, encodeEvent } from './blob-codec.js';

type Bindable = string | number | bigint | null;

/** Columns take what the event holds; anything SQLite cannot bind is kept as JSON rather than lost. */
function scalar(value: unknown): Bindable {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'bigint':
      return value;
    case 'boolean':
      return value ? 1 : 0;
    case 'undefined':
      return null;
    default:
      return value === null ? null : ((JSON.stringify(value) as string | undefined) ?? null);
  }
}

const json = (value: unknown): string | null =>
  value === undefined ? null : ((JSON.stringify(value) as string | undefined) ?? null);

interface RunRow extends LeaseColumns {
  readonly last_seq: number;
  readonly status: string;
  readonly finished_at: string | null;
  readonly duration_ms: number | null;
  readonly usage: string | null;
}

export interface LeaseColumns {
  readonly lease_owner: string | null;
  readonly lease_token: number;
  readonly lease_ttl_ms: number | null;
  readonly lease_expires_at: string | null;
}

/** The run's lease as the `runs` row holds it. */
export function heldLease(runId: string, row: LeaseColumns | undefined): Lease | undefined {
  if (!row || row.lease_owner === null) return undefined;
  return {
    runId,
    owner: row.lease_owner,
    token: row.lease_token,
    ttlMs: row.lease_ttl_ms ?? 0,
    expiresAt: row.lease_expires_at ?? '',
  };
}

/** Run-level state a batch may change; written back once at the end of the batch. */
interface RunState {
  status: unknown;
  finishedAt: string | null;
  durationMs: unknown;
  usage: TokenUsage | undefined;
  changed: boolean;
}

/**
 * Appends batches: the seq and lease checks, the journal rows, and every projection the events
 * change, mirroring core's `applyEvent` one event at a time. Runs inside the caller's
 * transaction, synchronously, with prepared statements.
 */
export class JournalWriter {
  readonly #blobs: BlobWriter;
  readonly #selectRun: Database.Statement<[string], RunRow>;
  readonly #insertRun: Database.Statement;
  readonly #updateRunStart: Database.Statement;
  readonly #updateRunState: Database.Statement;
  readonly #updateRunTail: Database.Statement;
  readonly #insertEvent: Database.Statement;
  readonly #clearDescriptions: Database.Statement;
  readonly #upsertPlanStep: Database.Statement;
  readonly #upsertStepStart: Database.Statement;
  readonly #upsertStepToolCall: Database.Statement;
  readonly #ensureStep: Database.Statement;
  readonly #upsertStepRetry: Database.Statement;
  readonly #selectStepUsage: Database.Statement<[string, string], string | null>;
  readonly #upsertStepUsage: Database.Statement;
  readonly #upsertStepEnd: Database.Statement;
  readonly #upsertExecution: Database.Statement;
  readonly #deleteArtifacts: Database.Statement;
  readonly #updateExecutionResult: Database.Statement;
  readonly #insertArtifact: Database.Statement;
  readonly #insertApproval: Database.Statement;
  readonly #insertModelCall: Database.Statement;

  constructor(sqlite: Database.Database, blobs: BlobWriter) {
    this.#blobs = blobs;
    this.#selectRun = sqlite.prepare(
      `select last_seq, status, finished_at, duration_ms, usage, lease_owner, lease_token, lease_ttl_ms, lease_expires_at
       from runs where id = ?`,
    );
    this.#insertRun = sqlite.prepare('insert into runs (id) values (?)');
    this.#updateRunStart = sqlite.prepare(
      `update runs set plan_id = ?, plan_digest = ?, plan = ?, plan_sha256 = ?, engine = ?, goal = ?, authorization = ?,
       parent_run_id = ?, options = ?, created_at = ? where id = ?`,
    );
    this.#updateRunState = sqlite.prepare(
      `update runs set status = ?, finished_at = ?, duration_ms = ?, usage = ?, last_seq = ?, updated_at = ?
       where id = ?`,
    );
    this.#updateRunTail = sqlite.prepare('update runs set last_seq = ?, updated_at = ? where id = ?');
    this.#insertEvent = sqlite.prepare(
      'insert into events (run_id, seq, type, at, payload, blob_refs) values (?, ?, ?, ?, ?, ?)',
    );
    this.#clearDescriptions = sqlite.prepare(
      'update steps set description = null where run_id = ? and description is not null',
    );
    this.#upsertPlanStep = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, plan_index, status, attempt, tool, description)
       values (?, ?, ?, ?, 'pending', 0, ?, ?)
       on conflict (run_id, step_id) do update set description = excluded.description`,
    );
    this.#upsertStepStart = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, status, attempt, tool, execution_id, started_at)
       values (?, ?, ?, 'running', ?, ?, ?, ?)
       on conflict (run_id, step_id) do update set status = 'running', attempt = excluded.attempt,
         tool = coalesce(excluded.tool, steps.tool), execution_id = excluded.execution_id,
         started_at = excluded.started_at, ended_at = null, duration_ms = null, tool_called = 0, idempotent = null,
         output = null, output_sha256 = null, error = null`,
    );
    this.#upsertStepToolCall = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, status, attempt, tool_called, idempotent)
       values (?, ?, ?, 'pending', 0, 1, ?)
       on conflict (run_id, step_id) do update set tool_called = 1,
         idempotent = case when steps.idempotent = 0 then 0 else excluded.idempotent end`,
    );
    this.#ensureStep = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, status, attempt) values (?, ?, ?, 'pending', 0)
       on conflict (run_id, step_id) do nothing`,
    );
    this.#upsertStepRetry = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, status, attempt) values (?, ?, ?, 'retrying', 0)
       on conflict (run_id, step_id) do update set status = 'retrying'`,
    );
    this.#selectStepUsage = sqlite
      .prepare<[string, string], string | null>('select usage from steps where run_id = ? and step_id = ?')
      .pluck();
    this.#upsertStepUsage = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, status, attempt, usage) values (?, ?, ?, 'pending', 0, ?)
       on conflict (run_id, step_id) do update set usage = excluded.usage`,
    );
    this.#upsertStepEnd = sqlite.prepare(
      `insert into steps (run_id, step_id, first_seq, status, attempt, tool, execution_id, started_at, ended_at,
         duration_ms, output, output_sha256, error)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (run_id, step_id) do update set status = excluded.status, attempt = excluded.attempt,
         tool = coalesce(excluded.tool, steps.tool), execution_id = excluded.execution_id,
         started_at = excluded.started_at, ended_at = excluded.ended_at, duration_ms = excluded.duration_ms,
         output = excluded.output, output_sha256 = excluded.output_sha256, error = excluded.error`,
    );
    this.#upsertExecution = sqlite.prepare(
      `insert into executions (execution_id, run_id, step_id, attempt, turn, tool, effect, idempotent, args,
         args_sha256, call_seq, started_at, status)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running')
       on conflict (execution_id) do update set run_id = excluded.run_id, step_id = excluded.step_id,
         attempt = excluded.attempt, turn = excluded.turn, tool = excluded.tool, effect = excluded.effect,
         idempotent = excluded.idempotent, args = excluded.args, args_sha256 = excluded.args_sha256,
         call_seq = excluded.call_seq, result_seq = null, started_at = excluded.started_at, finished_at = null,
         status = 'running', duration_ms = null, exit_code = null, error = null, result = null, result_sha256 = null`,
    );
    this.#deleteArtifacts = sqlite.prepare('delete from artifacts where execution_id = ?');
    this.#updateExecutionResult = sqlite.prepare(
      `update executions set result_seq = ?, finished_at = ?, status = ?, duration_ms = ?, exit_code = ?, error = ?,
         result = ?, result_sha256 = ?
       where execution_id = ? and run_id = ?`,
    );
    this.#insertArtifact = sqlite.prepare(
      `insert into artifacts (execution_id, position, run_id, kind, name, media_type, truncated, size, content,
         content_sha256)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#insertApproval = sqlite.prepare(
      `insert into approvals (run_id, seq, execution_id, step_id, tool, decision, source, decided_by, reason, at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#insertModelCall = sqlite.prepare(
      `insert into model_calls (run_id, seq, step_id, turn, model, request, request_sha256, response, response_sha256,
         usage, latency_ms, error, at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** The whole batch; call inside one IMMEDIATE transaction. Throws E502/E501 before writing. */
  append(runId: string, events: readonly RunEvent[], lease: Lease | undefined, now: number): void {
    this.#blobs.reset();
    const row = this.#selectRun.get(runId);
    checkBatch(runId, row?.last_seq ?? 0, events);
    checkLease(runId, heldLease(runId, row ?? undefined), lease, now);
    if (!row) this.#insertRun.run(runId);
    const state: RunState = {
      status: row?.status ?? 'running',
      finishedAt: row?.finished_at ?? null,
      durationMs: row?.duration_ms ?? null,
      usage: row?.usage ? (JSON.parse(row.usage) as TokenUsage) : undefined,
      changed: false,
    };
    for (const event of events) {
      const encoded = encodeEvent(event, this.#blobs);
      this.#insertEvent.run(runId, event.seq, event.type, event.at, encoded.payload, encoded.blobRefs);
      this.#project(runId, event, state);
    }
    const last = events[events.length - 1] as RunEvent;
    if (state.changed) {
      this.#updateRunState.run(
        scalar(state.status),
        state.finishedAt,
        scalar(state.durationMs),
        json(state.usage),
        last.seq,
        last.at,
        runId,
      );
    } else {
      this.#updateRunTail.run(last.seq, last.at, runId);
    }
  }

  #project(runId: string, event: RunEvent, state: RunState): void {
    const { seq, at } = event;
    switch (event.type) {
      case 'run-start': {
        const plan = this.#blobs.json(event.plan);
        this.#updateRunStart.run(
          scalar(event.planId),
          scalar(event.planDigest),
          plan.text,
          plan.sha256,
          scalar(event.engine),
          scalar(event.plan.goal),
          json(event.authorization),
          scalar(event.parentRunId),
          json(event.options),
          at,
          runId,
        );
        this.#clearDescriptions.run(runId);
        const seen = new Set<string>();
        event.plan.steps.forEach((step, index) => {
          // `find` in the fold takes the first step with an id; later duplicates change nothing.
          if (seen.has(step.id)) return;
          seen.add(step.id);
          this.#upsertPlanStep.run(runId, step.id, seq, index, scalar(step.tool), scalar(step.description));
        });
        break;
      }
      case 'run-resume':
        state.status = 'running';
        state.finishedAt = null;
        state.changed = true;
        break;
      case 'step-start':
        this.#upsertStepStart.run(
          runId,
          event.stepId,
          seq,
          scalar(event.attempt),
          scalar(event.tool),
          scalar(event.executionId),
          at,
        );
        break;
      case 'tool-call': {
        this.#upsertStepToolCall.run(runId, event.stepId, seq, scalar(event.idempotent));
        const args = this.#blobs.json(event.args);
        this.#upsertExecution.run(
          event.executionId,
          runId,
          event.stepId,
          scalar(event.attempt),
          scalar(event.turn),
          scalar(event.tool),
          scalar(event.effect),
          scalar(event.idempotent),
          args.text,
          args.sha256,
          seq,
          at,
        );
        this.#deleteArtifacts.run(event.executionId);
        break;
      }
      case 'tool-result': {
        this.#ensureStep.run(runId, event.stepId, seq);
        const output = this.#blobs.json(event.output);
        const changed = this.#updateExecutionResult.run(
          seq,
          at,
          scalar(event.status),
          scalar(event.durationMs),
          scalar(exitCodeOf(event.output, event.error)),
          json(event.error),
          output.text,
          output.sha256,
          event.executionId,
          runId,
        ).changes;
        if (changed > 0) {
          this.#deleteArtifacts.run(event.executionId);
          (event.artifacts ?? []).forEach((artifact, position) => {
            const content = typeof artifact.content === 'string' ? artifact.content : (json(artifact.content) ?? '');
            const stored = this.#blobs.text(content);
            this.#insertArtifact.run(
              event.executionId,
              position,
              runId,
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
        break;
      }
      case 'approval-decision':
        this.#insertApproval.run(
          runId,
          seq,
          event.executionId,
          event.stepId,
          scalar(event.tool),
          scalar(event.decision),
          scalar(event.source),
          scalar(event.by),
          scalar(event.reason),
          at,
        );
        break;
      case 'step-retry':
        this.#upsertStepRetry.run(runId, event.stepId, seq);
        break;
      case 'model-call': {
        const request = this.#blobs.json(event.request);
        const response = this.#blobs.json(event.response);
        this.#insertModelCall.run(
          runId,
          seq,
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
          at,
        );
        const stepUsageText = this.#selectStepUsage.get(runId, event.stepId);
        const stepUsage = addUsage(stepUsageText ? (JSON.parse(stepUsageText) as TokenUsage) : undefined, event.usage);
        this.#upsertStepUsage.run(runId, event.stepId, seq, json(stepUsage));
        const usage = addUsage(state.usage, event.usage);
        if (usage !== state.usage) {
          state.usage = usage;
          state.changed = true;
        }
        break;
      }
      case 'step-end': {
        const result: StepResult = event.result;
        const output = this.#blobs.json(result.output);
        this.#upsertStepEnd.run(
          runId,
          event.stepId,
          seq,
          scalar(result.status),
          scalar(result.attempt),
          scalar(result.tool),
          scalar(result.executionId),
          scalar(result.startedAt),
          at,
          scalar(result.durationMs),
          output.text,
          output.sha256,
          json(result.error),
        );
        break;
      }
      case 'run-end':
        state.status = event.status;
        state.finishedAt = at;
        state.durationMs = event.durationMs;
        if (event.usage) state.usage = event.usage;
        state.changed = true;
        break;
      default:
        // progress-report, approval-request, recovery-decision, limit-reach: the journal is their record.
        break;
    }
  }
}
