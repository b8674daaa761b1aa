import type { RunEvent } from '@stepwise/core';
import { type ExecutionState, exitCodeOf, type FoldChanges, type FoldedRun, summarizeRun } from '@stepwise/core/store';
import { type BlobRow, packEvent, sha256 } from './blob-fields.js';
import { perSchema, type Queryable, runStatement, type Statement, statement } from './statements.js';

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

/** Rows of a table as one array per column (`unnest`ed by the statement), in the statement's column order. */
type Columns = unknown[][];

/** `row(item)` of every item, as columns led by the run's id. */
function columnsOf<T>(
  runId: string,
  items: readonly T[],
  width: number,
  row: (item: T) => readonly unknown[],
): Columns {
  const columns: Columns = Array.from({ length: width }, () => []);
  for (const item of items) {
    const values = row(item);
    (columns[0] as unknown[]).push(runId);
    for (let index = 1; index < width; index++) (columns[index] as unknown[]).push(values[index - 1]);
  }
  return columns;
}

/** The SQL of `unnest($n::type[], …) as alias(names…)` for parameters from `first` on. */
function unnest(first: number, alias: string, columns: readonly (readonly [string, string])[]): string {
  const parameters = columns.map(([, type], index) => `$${first + index}::${type}[]`).join(', ');
  return `unnest(${parameters}) as ${alias}(${columns.map(([name]) => name).join(', ')})`;
}

type ColumnList = readonly (readonly [string, string])[];
const RUN_ID = ['run_id', 'text'] as const;
const EVENT_COLUMNS: ColumnList = [
  RUN_ID,
  ['seq', 'int'],
  ['type', 'text'],
  ['at', 'timestamptz'],
  ['payload', 'json'],
  ['blob_refs', 'jsonb'],
];
const REMOVED_STEP_COLUMNS: ColumnList = [RUN_ID, ['step_id', 'text']];
const STEP_COLUMNS: ColumnList = [
  RUN_ID,
  ['step_id', 'text'],
  ['status', 'text'],
  ['attempt', 'int'],
  ['tool', 'text'],
  ['execution_id', 'text'],
  ['started_at', 'timestamptz'],
  ['duration_ms', 'int'],
  ['tool_called', 'boolean'],
  ['idempotent', 'boolean'],
  ['error_code', 'text'],
  ['error_message', 'text'],
];
const EXECUTION_COLUMNS: ColumnList = [
  RUN_ID,
  ['execution_id', 'text'],
  ['step_id', 'text'],
  ['attempt', 'int'],
  ['turn', 'int'],
  ['tool', 'text'],
  ['effect', 'text'],
  ['idempotent', 'boolean'],
  ['args', 'json'],
  ['args_sha256', 'text'],
  ['started_at', 'timestamptz'],
  ['finished_at', 'timestamptz'],
  ['status', 'text'],
  ['duration_ms', 'int'],
  ['exit_code', 'int'],
  ['error_code', 'text'],
  ['error_message', 'text'],
  ['output', 'json'],
  ['output_sha256', 'text'],
  ['called', 'boolean'],
];
/** What a later result changes of an execution called in an earlier batch. */
const RESULT_COLUMNS = [
  'finished_at',
  'status',
  'duration_ms',
  'exit_code',
  'error_code',
  'error_message',
  'output',
  'output_sha256',
];
const APPROVAL_COLUMNS: ColumnList = [
  RUN_ID,
  ['seq', 'int'],
  ['execution_id', 'text'],
  ['step_id', 'text'],
  ['tool', 'text'],
  ['decision', 'text'],
  ['source', 'text'],
  ['decided_by', 'text'],
  ['reason', 'text'],
  ['at', 'timestamptz'],
];
const MODEL_CALL_COLUMNS: ColumnList = [
  RUN_ID,
  ['seq', 'int'],
  ['step_id', 'text'],
  ['turn', 'int'],
  ['model', 'text'],
  ['prompt_tokens', 'int'],
  ['completion_tokens', 'int'],
  ['total_tokens', 'int'],
  ['latency_ms', 'int'],
  ['error_code', 'text'],
  ['at', 'timestamptz'],
];
const BLOB_COLUMNS: ColumnList = [
  ['sha256', 'text'],
  ['size', 'int'],
  ['content', 'text'],
];
const END_COLUMNS: ColumnList = [RUN_ID, ['status', 'text'], ['at', 'timestamptz']];
const RUN_COLUMNS: ColumnList = [
  ['id', 'text'],
  ['plan_id', 'text'],
  ['plan_digest', 'text'],
  ['engine', 'text'],
  ['goal', 'text'],
  ['status', 'text'],
  ['parent_run_id', 'text'],
  ['created_at', 'timestamptz'],
  ['updated_at', 'timestamptz'],
  ['finished_at', 'timestamptz'],
  ['last_seq', 'int'],
  ['step_count', 'int'],
  ['total_tokens', 'int'],
  ['summary', 'jsonb'],
];
/** The tables in the order of the statement's parameters (after none: every parameter is an array). */
const TABLES = [
  EVENT_COLUMNS,
  REMOVED_STEP_COLUMNS,
  STEP_COLUMNS,
  EXECUTION_COLUMNS,
  APPROVAL_COLUMNS,
  MODEL_CALL_COLUMNS,
  BLOB_COLUMNS,
  END_COLUMNS,
  RUN_COLUMNS,
];

const names = (columns: ColumnList) => columns.map(([name]) => name);
const updates = (columns: readonly string[]) => columns.map((name) => `${name} = excluded.${name}`).join(', ');

/**
 * The one statement that writes the batches of a group commit (data-modifying CTEs): their journal
 * rows, and `runs`, `steps`, `executions`, `approvals`, `model_calls` and `blobs` brought up to core's
 * folds; at a `run-end`, the run's cancel request and live output go and its work-queue row is done.
 * Its text is the same for every group (rows travel as one array per column), so it is prepared once
 * per connection: neither this process nor the server builds or plans SQL per append.
 */
/**
 * The text of the write. `fenced`: the statement also locks the runs' rows itself (`FOR UPDATE`,
 * under each append's lease token and expected last seq, given first as three arrays) and writes only
 * the runs it locked, returning their ids; without it, the caller locked them in its transaction.
 */
function writeText(schema: string, fenced: boolean): string {
  const table = (name: string) => `"${schema}"."${name}"`;
  let next = fenced ? 4 : 1;
  const only = (alias: string) => (fenced ? ` where ${alias}.run_id in (select id from locked)` : '');
  const [events, removed, steps, executions, approvals, modelCalls, blobs, ends, runs] = TABLES.map(
    (columns, index) => {
      const sql = unnest(next, `t${index}`, columns);
      next += columns.length;
      return sql;
    },
  ) as string[];
  const executionNames = names(EXECUTION_COLUMNS).filter((name) => name !== 'called');
  const executionInsert = `insert into ${table('executions')} (${executionNames.join(', ')})
      select ${executionNames.join(', ')} from batch_executions`;
  const runSets = names(RUN_COLUMNS)
    .slice(1)
    .map((name) => `${name} = t8.${name}`)
    .join(', ');
  const locked = fenced
    ? `locked as (select r.id from ${table('runs')} r
      join unnest($1::text[], $2::integer[], $3::integer[]) as l(id, token, expected) on r.id = l.id
      where r.last_seq = l.expected and r.lease_owner is not null and r.lease_token = l.token
      for update of r),`
    : '';
  return `with ${locked}
    write_events as (insert into ${table('events')} (${names(EVENT_COLUMNS).join(', ')})
      select * from ${events}${only('t0')}),
    removed_steps as (delete from ${table('steps')} s using ${removed}
      where s.run_id = t1.run_id and s.step_id = t1.step_id${fenced ? ' and t1.run_id in (select id from locked)' : ''}),
    write_steps as (insert into ${table('steps')} (${names(STEP_COLUMNS).join(', ')}) select * from ${steps}${only('t2')}
      on conflict (run_id, step_id) do update set ${updates(names(STEP_COLUMNS).slice(2))}),
    batch_executions as (select * from ${executions}${only('t3')}),
    called_executions as (${executionInsert} where called
      on conflict (execution_id) do update set ${updates(executionNames.filter((name) => name !== 'execution_id'))}),
    finished_executions as (${executionInsert} where not called
      on conflict (execution_id) do update set ${updates(RESULT_COLUMNS)}
      where ${table('executions')}.run_id = excluded.run_id),
    write_approvals as (insert into ${table('approvals')} (${names(APPROVAL_COLUMNS).join(', ')})
      select * from ${approvals}${only('t4')}),
    write_model_calls as (insert into ${table('model_calls')} (${names(MODEL_CALL_COLUMNS).join(', ')})
      select * from ${modelCalls}${only('t5')}),
    write_blobs as (insert into ${table('blobs')} (sha256, size, content) select * from ${blobs}
      on conflict (sha256) do nothing),
    ended as (select * from ${ends}${only('t7')}),
    ended_cancel as (delete from ${table('cancel_requests')} where run_id in (select run_id from ended)),
    ended_live as (delete from ${table('live_output')} where run_id in (select run_id from ended)),
    ended_queue as (update ${table('work_queue')} q set state = 'done', result_status = ended.status,
      finished_at = ended.at, claimed_by = null, claim_expires_at = null, last_error = null
      from ended where q.run_id = ended.run_id and q.state <> 'done')
    update ${table('runs')} r set ${runSets} from ${runs} where r.id = t8.id${fenced ? ' and t8.id in (select id from locked) returning r.id' : ''}`;
}

/**
 * The one statement that writes the batches of a group commit (data-modifying CTEs): their journal
 * rows, and `runs`, `steps`, `executions`, `approvals`, `model_calls` and `blobs` brought up to core's
 * folds; at a `run-end`, the run's cancel request and live output go and its work-queue row is done.
 * Its text is the same for every group (rows travel as one array per column), so it is prepared once
 * per connection: neither this process nor the server builds or plans SQL per append.
 */
const writeStatement = perSchema((schema): Statement => statement(writeText(schema, false)));
/** The same write as one statement on its own (no transaction around it), fenced in itself. */
const fencedWriteStatement = perSchema((schema): Statement => statement(writeText(schema, true)));

function eventColumns(runId: string, events: readonly RunEvent[], threshold: number, blobs: BlobRow[]): Columns {
  return columnsOf(runId, events, EVENT_COLUMNS.length, (event) => {
    const packed = packEvent(event, threshold);
    blobs.push(...packed.blobs);
    return [event.seq, event.type, event.at, packed.payload, packed.refs ? JSON.stringify(packed.refs) : null];
  });
}

function stepColumns(fold: FoldedRun, stepIds: ReadonlySet<string>): Columns {
  const present = [...stepIds].filter((stepId) => fold.steps.has(stepId));
  return columnsOf(fold.runId, present, STEP_COLUMNS.length, (stepId) => {
    const step = fold.steps.get(stepId) as NonNullable<ReturnType<typeof fold.steps.get>>;
    return [
      stepId,
      step.status,
      step.attempt,
      orNull(step.tool),
      orNull(step.executionId),
      timeOrNull(step.startedAt),
      roundOrNull(step.result?.durationMs),
      step.toolCalled,
      orNull(step.idempotent),
      orNull(step.result?.error?.code),
      orNull(step.result?.error?.message),
    ];
  });
}

/**
 * The executions the batch changed. One the batch called (`called`) is written whole, whichever run
 * held its id before (the latest call owns it, as in every store); one called earlier gets its
 * result, and only while this run still owns it.
 */
function executionColumns(
  fold: FoldedRun,
  executionIds: ReadonlySet<string>,
  firstSeq: number,
  threshold: number,
  blobs: BlobRow[],
): Columns {
  const changed: ExecutionState[] = [];
  for (const executionId of executionIds) {
    const execution = fold.executions.get(executionId);
    if (execution) changed.push(execution);
  }
  return columnsOf(fold.runId, changed, EXECUTION_COLUMNS.length, (execution) => {
    const args = jsonOrBlob(execution.args, threshold, blobs);
    const output = jsonOrBlob(execution.output, threshold, blobs);
    return [
      execution.executionId,
      execution.stepId,
      execution.attempt,
      orNull(execution.turn),
      execution.tool,
      execution.effect,
      execution.idempotent,
      args.json,
      args.sha,
      execution.startedAt,
      timeOrNull(execution.finishedAt),
      execution.status,
      roundOrNull(execution.durationMs),
      orNull(exitCodeOf(execution.output, execution.error)),
      orNull(execution.error?.code),
      orNull(execution.error?.message),
      output.json,
      output.sha,
      execution.callSeq >= firstSeq,
    ];
  });
}

function approvalColumns(runId: string, changes: FoldChanges): Columns {
  return columnsOf(runId, changes.approvals, APPROVAL_COLUMNS.length, (event) => [
    event.seq,
    event.executionId,
    event.stepId,
    orNull(event.tool),
    event.decision,
    event.source,
    orNull(event.by),
    orNull(event.reason),
    event.at,
  ]);
}

function modelCallColumns(runId: string, changes: FoldChanges): Columns {
  return columnsOf(runId, changes.modelCalls, MODEL_CALL_COLUMNS.length, (event) => [
    event.seq,
    event.stepId,
    event.turn,
    event.model,
    orNull(event.usage?.promptTokens),
    orNull(event.usage?.completionTokens),
    orNull(event.usage?.totalTokens),
    roundOrNull(event.latencyMs),
    orNull(event.error?.code),
    event.at,
  ]);
}

function runColumns(fold: FoldedRun): Columns {
  const summary = summarizeRun(fold);
  return columnsOf(fold.runId, [fold], RUN_COLUMNS.length, () => [
    fold.planId,
    fold.planDigest,
    fold.engine,
    orNull(fold.goal),
    fold.status,
    orNull(fold.parentRunId),
    timeOrNull(fold.createdAt),
    timeOrNull(fold.updatedAt),
    timeOrNull(fold.finishedAt),
    fold.lastSeq,
    summary.stepCount,
    orNull(fold.usage?.totalTokens),
    JSON.stringify(summary),
  ]);
}

/** One run's batch, folded: what the group's statement writes for it. */
export interface FoldedBatch {
  readonly fold: FoldedRun;
  /** What the batch changed (filled by `applyEvent`). */
  readonly changes: FoldChanges;
  readonly events: readonly RunEvent[];
}

/** The columns of one batch, table after table in the order of `TABLES` (blobs collected apart). */
function batchColumns(batch: FoldedBatch, threshold: number, blobs: BlobRow[]): Columns[] {
  const { fold, changes, events } = batch;
  const runId = fold.runId;
  // A step that left and came back in the batch is written, not deleted: one statement cannot do both to a row.
  const removed = [...changes.removedSteps].filter((stepId) => !changes.steps.has(stepId));
  const end = events.find((event) => event.type === 'run-end');
  return [
    eventColumns(runId, events, threshold, blobs),
    columnsOf(runId, removed, REMOVED_STEP_COLUMNS.length, (stepId) => [stepId]),
    stepColumns(fold, changes.steps),
    executionColumns(fold, changes.executions, (events[0] as RunEvent).seq, threshold, blobs),
    approvalColumns(runId, changes),
    modelCallColumns(runId, changes),
    [],
    columnsOf(runId, end ? [end] : [], END_COLUMNS.length, (event) => [
      (event as { status?: string }).status,
      event.at,
    ]),
    runColumns(fold),
  ];
}

/** Every table's columns for `batches`, concatenated, in the order of `TABLES`. */
function groupColumns(batches: readonly FoldedBatch[], threshold: number): unknown[][] {
  const blobs: BlobRow[] = [];
  const tables = TABLES.map((columns) => Array.from({ length: columns.length }, (): unknown[] => []));
  for (const batch of batches) {
    for (const [table, columns] of batchColumns(batch, threshold, blobs).entries()) {
      const into = tables[table] as unknown[][];
      for (const [index, column] of columns.entries())
        for (const value of column) (into[index] as unknown[]).push(value);
    }
  }
  const unique = [...new Map(blobs.map((blob) => [blob.sha256, blob])).values()];
  tables[6] = [unique.map((blob) => blob.sha256), unique.map((blob) => blob.size), unique.map((blob) => blob.content)];
  return tables.flat();
}

/**
 * Writes the batches of a group commit (of different runs) in the caller's transaction, which
 * locked their runs' rows: their journal rows, and `runs`, `steps`, `executions`, `approvals` and
 * `model_calls` brought up to core's folds. One prepared statement however many runs and tables.
 */
export async function writeBatches(
  client: Queryable,
  schema: string,
  batches: readonly FoldedBatch[],
  threshold: number,
): Promise<void> {
  await runStatement(client, writeStatement(schema), groupColumns(batches, threshold));
}

/** What a fenced write needs of a batch besides its rows: the lease it is written under and the run's last seq before it. */
export interface FencedBatch extends FoldedBatch {
  readonly token: number;
  readonly expectedSeq: number;
}

/**
 * Writes batches that continue their runs' cached folds as one statement with no transaction around
 * it (one round trip, one commit): the statement locks each run's row itself, under the batch's
 * lease token and expected last seq, and writes only the runs it locked. Whether each was written;
 * one that was not (its lease superseded, its run written elsewhere) wrote nothing.
 */
export async function writeFencedBatches(
  client: Queryable,
  schema: string,
  batches: readonly FencedBatch[],
  threshold: number,
): Promise<boolean[]> {
  const values = [
    batches.map((batch) => batch.fold.runId),
    batches.map((batch) => batch.token),
    batches.map((batch) => batch.expectedSeq),
    ...groupColumns(batches, threshold),
  ];
  const rows = await runStatement<{ id: string }>(client, fencedWriteStatement(schema), values);
  const written = new Set(rows.map((row) => row.id));
  return batches.map((batch) => written.has(batch.fold.runId));
}
