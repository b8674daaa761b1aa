import type { RunEvent } from '@stepwise/core';
import { type ExecutionState, exitCodeOf, type FoldChanges, type FoldedRun, summarizeRun } from '@stepwise/core/store';
import { type Compilable, type Insertable, type Kysely, sql } from 'kysely';
import { type BlobRow, packEvent, sha256 } from './blob-fields.js';
import type { ExecutionsTable, PostgresStoreDatabase } from './database-schema.js';

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
 * brought up to core's fold, for what the batch changed (`changes`, filled by `applyEvent`). One
 * statement (data-modifying CTEs): one round trip however many tables.
 */
export async function writeBatch(
  trx: Transaction,
  fold: FoldedRun,
  changes: FoldChanges,
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
  const firstSeq = (events[0] as RunEvent).seq;
  // A step that left and came back in the batch is written, not deleted: one statement cannot do both to a row.
  const removed = [...changes.removedSteps].filter((stepId) => !changes.steps.has(stepId));
  if (removed.length > 0) {
    writes.push(trx.deleteFrom('steps').where('run_id', '=', fold.runId).where('step_id', 'in', removed));
  }
  writes.push(upsertSteps(trx, fold, changes.steps));
  writes.push(...upsertExecutions(trx, fold, changes.executions, firstSeq, threshold, blobs));
  writes.push(...insertDecisions(trx, fold.runId, changes), insertBlobs(trx, blobs));
  const ctes = writes
    .filter((write): write is Compilable => write !== undefined)
    .map((write, index) => sql`${sql.id(`write_${index}`)} as (${write})`);
  await sql`with ${sql.join(ctes)} ${updateRun}`.execute(trx);
}

function upsertSteps(trx: Transaction, fold: FoldedRun, stepIds: ReadonlySet<string>): Compilable | undefined {
  const rows = [...stepIds].flatMap((stepId) => {
    const step = fold.steps.get(stepId);
    if (!step) return [];
    return [
      {
        run_id: fold.runId,
        step_id: stepId,
        status: step.status,
        attempt: step.attempt,
        tool: orNull(step.tool),
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

type ExecutionRow = Insertable<ExecutionsTable>;

function executionRow(fold: FoldedRun, execution: ExecutionState, threshold: number, blobs: BlobRow[]): ExecutionRow {
  const args = jsonOrBlob(execution.args, threshold, blobs);
  const output = jsonOrBlob(execution.output, threshold, blobs);
  return {
    execution_id: execution.executionId,
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
  };
}

/**
 * The executions the batch changed. One the batch called is written whole, whichever run held its
 * id before (the latest call owns it, as in every store); one called earlier gets its result, and
 * only while this run still owns it.
 */
function upsertExecutions(
  trx: Transaction,
  fold: FoldedRun,
  executionIds: ReadonlySet<string>,
  firstSeq: number,
  threshold: number,
  blobs: BlobRow[],
): Compilable[] {
  const called: ExecutionRow[] = [];
  const finished: ExecutionRow[] = [];
  for (const executionId of executionIds) {
    const execution = fold.executions.get(executionId);
    if (!execution) continue;
    (execution.callSeq >= firstSeq ? called : finished).push(executionRow(fold, execution, threshold, blobs));
  }
  const writes: Compilable[] = [];
  if (called.length > 0) writes.push(insertCalled(trx, called));
  if (finished.length > 0) writes.push(updateFinished(trx, fold.runId, finished));
  return writes;
}

function insertCalled(trx: Transaction, rows: readonly ExecutionRow[]): Compilable {
  return trx
    .insertInto('executions')
    .values(rows)
    .onConflict((conflict) =>
      conflict.column('execution_id').doUpdateSet((update) => ({
        run_id: update.ref('excluded.run_id'),
        step_id: update.ref('excluded.step_id'),
        attempt: update.ref('excluded.attempt'),
        turn: update.ref('excluded.turn'),
        tool: update.ref('excluded.tool'),
        effect: update.ref('excluded.effect'),
        idempotent: update.ref('excluded.idempotent'),
        args: update.ref('excluded.args'),
        args_sha256: update.ref('excluded.args_sha256'),
        started_at: update.ref('excluded.started_at'),
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

function updateFinished(trx: Transaction, runId: string, rows: readonly ExecutionRow[]): Compilable {
  return trx
    .insertInto('executions')
    .values(rows)
    .onConflict((conflict) =>
      conflict
        .column('execution_id')
        .doUpdateSet((update) => ({
          finished_at: update.ref('excluded.finished_at'),
          status: update.ref('excluded.status'),
          duration_ms: update.ref('excluded.duration_ms'),
          exit_code: update.ref('excluded.exit_code'),
          error_code: update.ref('excluded.error_code'),
          error_message: update.ref('excluded.error_message'),
          output: update.ref('excluded.output'),
          output_sha256: update.ref('excluded.output_sha256'),
        }))
        .where('executions.run_id', '=', runId),
    );
}

function insertDecisions(trx: Transaction, runId: string, changes: FoldChanges): Compilable[] {
  const writes: Compilable[] = [];
  const approvals = changes.approvals.map((event) => ({
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
  const calls = changes.modelCalls.map((event) => ({
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
