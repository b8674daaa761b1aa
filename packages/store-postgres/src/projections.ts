import {
  type ApprovalDecisionEvent,
  exitCodeOf,
  type FoldedRun,
  type ModelCallEvent,
  type RunEvent,
  summarizeRun,
} from '@stepwise/core';
import { type Compilable, type Kysely, sql } from 'kysely';
import { type BlobRow, packEvent, sha256 } from './blob-fields.js';
import type { PostgresStoreDatabase } from './database-schema.js';

type Transaction = Kysely<PostgresStoreDatabase>;

const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);
const roundOrNull = (value: number | undefined) =>
  value === undefined || !Number.isFinite(value) ? null : Math.round(value);
const timeOrNull = (value: string | undefined) => (value ? value : null);

/** A JSON value for a `json` column, or a blob reference when it is large. */
function jsonOrBlob(value: unknown, threshold: number, blobs: BlobRow[]): { json: string | null; sha: string | null } {
  if (value === undefined) return { json: null, sha: null };
  const json = JSON.stringify(value);
  if (json.length < threshold) return { json, sha: null };
  const hash = sha256(json);
  blobs.push({ sha256: hash, size: Buffer.byteLength(json), content: json });
  return { json: null, sha: hash };
}

function insertBlobs(trx: Transaction, blobs: readonly BlobRow[]): Compilable | undefined {
  const unique = [...new Map(blobs.map((blob) => [blob.sha256, blob])).values()];
  if (unique.length === 0) return undefined;
  return trx
    .insertInto('blobs')
    .values(unique)
    .onConflict((conflict) => conflict.column('sha256').doNothing());
}

/** The journal rows of a batch (large fields as blobs go to `blobs`). */
function insertEvents(
  trx: Transaction,
  runId: string,
  events: readonly RunEvent[],
  threshold: number,
  blobs: BlobRow[],
): Compilable {
  const rows = events.map((event) => {
    const packed = packEvent(event, threshold);
    blobs.push(...packed.blobs);
    return {
      run_id: runId,
      seq: event.seq,
      type: event.type,
      at: event.at,
      payload: packed.payload,
      blob_refs: packed.refs ? JSON.stringify(packed.refs) : null,
    };
  });
  return trx.insertInto('events').values(rows);
}

/**
 * Writes a batch: its journal rows, and `runs`, `steps`, `executions`, `approvals` and `model_calls`
 * brought up to the fold. One statement (data-modifying CTEs): one round trip however many tables.
 */
export async function writeBatch(
  trx: Transaction,
  fold: FoldedRun,
  events: readonly RunEvent[],
  threshold: number,
): Promise<void> {
  const blobs: BlobRow[] = [];
  const writes: (Compilable | undefined)[] = [insertEvents(trx, fold.runId, events, threshold, blobs)];
  const summary = summarizeRun(fold);
  const updateRun = trx
    .updateTable('runs')
    .set({
      plan_id: fold.planId,
      plan_digest: fold.planDigest,
      engine: fold.engine,
      goal: orNull(fold.goal),
      status: fold.status,
      parent_run_id: orNull(fold.parentRunId),
      created_at: timeOrNull(fold.createdAt),
      updated_at: timeOrNull(fold.updatedAt),
      finished_at: timeOrNull(fold.finishedAt),
      last_seq: fold.lastSeq,
      step_count: summary.stepCount,
      total_tokens: orNull(fold.usage?.totalTokens),
      summary: JSON.stringify(summary),
    })
    .where('id', '=', fold.runId);
  const stepIds = new Set<string>();
  const executionIds = new Set<string>();
  for (const event of events) {
    const record = event as unknown as { stepId?: unknown; executionId?: unknown };
    if (typeof record.stepId === 'string') stepIds.add(record.stepId);
    if (typeof record.executionId === 'string' && fold.executions.has(record.executionId)) {
      executionIds.add(record.executionId);
    }
  }
  writes.push(upsertSteps(trx, fold, stepIds), upsertExecutions(trx, fold, executionIds, threshold, blobs));
  writes.push(...insertDecisions(trx, fold.runId, events), insertBlobs(trx, blobs));
  const ctes = writes
    .filter((write): write is Compilable => write !== undefined)
    .map((write, index) => sql`${sql.id(`write_${index}`)} as (${write})`);
  await sql`with ${sql.join(ctes)} ${updateRun}`.execute(trx);
}

function upsertSteps(trx: Transaction, fold: FoldedRun, stepIds: ReadonlySet<string>): Compilable | undefined {
  const rows = [...stepIds].flatMap((stepId) => {
    const step = fold.steps.get(stepId);
    if (!step) return [];
    const tool = fold.executions.get(step.executionId ?? '')?.tool ?? step.result?.tool;
    return [
      {
        run_id: fold.runId,
        step_id: stepId,
        status: step.status,
        attempt: step.attempt,
        tool: orNull(tool),
        execution_id: orNull(step.executionId),
        started_at: timeOrNull(step.startedAt),
        duration_ms: roundOrNull(step.result?.durationMs),
        tool_called: step.toolCalled,
        idempotent: orNull(step.idempotent),
        error_code: orNull(step.result?.error?.code),
        error_message: orNull(step.result?.error?.message),
      },
    ];
  });
  if (rows.length === 0) return undefined;
  return trx
    .insertInto('steps')
    .values(rows)
    .onConflict((conflict) =>
      conflict.columns(['run_id', 'step_id']).doUpdateSet((update) => ({
        status: update.ref('excluded.status'),
        attempt: update.ref('excluded.attempt'),
        tool: update.ref('excluded.tool'),
        execution_id: update.ref('excluded.execution_id'),
        started_at: update.ref('excluded.started_at'),
        duration_ms: update.ref('excluded.duration_ms'),
        tool_called: update.ref('excluded.tool_called'),
        idempotent: update.ref('excluded.idempotent'),
        error_code: update.ref('excluded.error_code'),
        error_message: update.ref('excluded.error_message'),
      })),
    );
}

function upsertExecutions(
  trx: Transaction,
  fold: FoldedRun,
  executionIds: ReadonlySet<string>,
  threshold: number,
  blobs: BlobRow[],
): Compilable | undefined {
  const rows = [...executionIds].flatMap((executionId) => {
    const execution = fold.executions.get(executionId);
    if (!execution) return [];
    const args = jsonOrBlob(execution.args, threshold, blobs);
    const output = jsonOrBlob(execution.output, threshold, blobs);
    return [
      {
        execution_id: executionId,
        run_id: fold.runId,
        step_id: execution.stepId,
        attempt: execution.attempt,
        turn: orNull(execution.turn),
        tool: execution.tool,
        effect: execution.effect,
        idempotent: execution.idempotent,
        args: args.json,
        args_sha256: args.sha,
        started_at: execution.startedAt,
        finished_at: timeOrNull(execution.finishedAt),
        status: execution.status,
        duration_ms: roundOrNull(execution.durationMs),
        exit_code: orNull(exitCodeOf(execution.output, execution.error)),
        error_code: orNull(execution.error?.code),
        error_message: orNull(execution.error?.message),
        output: output.json,
        output_sha256: output.sha,
      },
    ];
  });
  if (rows.length === 0) return undefined;
  return trx
    .insertInto('executions')
    .values(rows)
    .onConflict((conflict) =>
      conflict.column('execution_id').doUpdateSet((update) => ({
        finished_at: update.ref('excluded.finished_at'),
        status: update.ref('excluded.status'),
        duration_ms: update.ref('excluded.duration_ms'),
        exit_code: update.ref('excluded.exit_code'),
        error_code: update.ref('excluded.error_code'),
        error_message: update.ref('excluded.error_message'),
        output: update.ref('excluded.output'),
        output_sha256: update.ref('excluded.output_sha256'),
      })),
    );
}

function insertDecisions(trx: Transaction, runId: string, events: readonly RunEvent[]): Compilable[] {
  const writes: Compilable[] = [];
  const approvals = events
    .filter((event): event is ApprovalDecisionEvent => event.type === 'approval-decision')
    .map((event) => ({
      run_id: runId,
      seq: event.seq,
      execution_id: event.executionId,
      step_id: event.stepId,
      tool: orNull(event.tool),
      decision: event.decision,
      source: event.source,
      decided_by: orNull(event.by),
      reason: orNull(event.reason),
      at: event.at,
    }));
  if (approvals.length > 0) writes.push(trx.insertInto('approvals').values(approvals));
  const calls = events
    .filter((event): event is ModelCallEvent => event.type === 'model-call')
    .map((event) => ({
      run_id: runId,
      seq: event.seq,
      step_id: event.stepId,
      turn: event.turn,
      model: event.model,
      prompt_tokens: orNull(event.usage?.promptTokens),
      completion_tokens: orNull(event.usage?.completionTokens),
      total_tokens: orNull(event.usage?.totalTokens),
      latency_ms: roundOrNull(event.latencyMs),
      error_code: orNull(event.error?.code),
      at: event.at,
    }));
  if (calls.length > 0) writes.push(trx.insertInto('model_calls').values(calls));
  return writes;
}
