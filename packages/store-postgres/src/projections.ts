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

function columnsOf<T>(items: readonly T[], width: number, row: (item: T) => readonly unknown[]): Columns {
  const columns: Columns = Array.from({ length: width }, () => []);
  for (const item of items) {
    const values = row(item);
    for (let index = 0; index < width; index++) (columns[index] as unknown[]).push(values[index]);
  }
  return columns;
}

/** The SQL of `unnest($n::type[], …) as alias(names…)` for parameters from `first` on. */
function unnest(first: number, alias: string, columns: readonly (readonly [string, string])[]): string {
  const parameters = columns.map(([, type], index) => `$${first + index}::${type}[]`).join(', ');
  return `unnest(${parameters}) as ${alias}(${columns.map(([name]) => name).join(', ')})`;
}

const EVENT_COLUMNS = [
  ['seq', 'int'],
  ['type', 'text'],
  ['at', 'timestamptz'],
  ['payload', 'json'],
  ['blob_refs', 'jsonb'],
] as const;
const STEP_COLUMNS = [
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
] as const;
const EXECUTION_COLUMNS = [
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
] as const;
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
const APPROVAL_COLUMNS = [
  ['seq', 'int'],
  ['execution_id', 'text'],
  ['step_id', 'text'],
  ['tool', 'text'],
  ['decision', 'text'],
  ['source', 'text'],
  ['decided_by', 'text'],
  ['reason', 'text'],
  ['at', 'timestamptz'],
] as const;
const MODEL_CALL_COLUMNS = [
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
] as const;
const BLOB_COLUMNS = [
  ['sha256', 'text'],
  ['size', 'int'],
  ['content', 'text'],
] as const;
const RUN_COLUMNS = [
  'plan_id',
  'plan_digest',
  'engine',
  'goal',
  'status',
  'parent_run_id',
  'created_at',
  'updated_at',
  'finished_at',
  'last_seq',
  'step_count',
  'total_tokens',
  'summary',
];

const names = (columns: readonly (readonly [string, string])[]) => columns.map(([name]) => name);
const updates = (columns: readonly string[]) => columns.map((name) => `${name} = excluded.${name}`).join(', ');

/**
 * The one statement that writes a batch (data-modifying CTEs): its journal rows, and `runs`, `steps`,
 * `executions`, `approvals`, `model_calls` and `blobs` brought up to core's fold; at a `run-end`,
 * the run's cancel request and live output go and its work-queue row is done. Its text is the same
 * for every batch (rows travel as one array per column), so it is prepared once per connection:
 * neither this process nor the server builds or plans SQL per append.
 */
const writeStatement = perSchema((schema): Statement => {
  const table = (name: string) => `"${schema}"."${name}"`;
  let next = 2;
  const take = (count: number) => {
    const first = next;
    next += count;
    return first;
  };
  const events = unnest(take(EVENT_COLUMNS.length), 'e', EVENT_COLUMNS);
  const removed = take(1);
  const steps = unnest(take(STEP_COLUMNS.length), 's', STEP_COLUMNS);
  const executions = unnest(take(EXECUTION_COLUMNS.length), 'x', EXECUTION_COLUMNS);
  const approvals = unnest(take(APPROVAL_COLUMNS.length), 'a', APPROVAL_COLUMNS);
  const modelCalls = unnest(take(MODEL_CALL_COLUMNS.length), 'm', MODEL_CALL_COLUMNS);
  const blobs = unnest(take(BLOB_COLUMNS.length), 'b', BLOB_COLUMNS);
  const [ended, endStatus, endAt] = [take(1), take(1), take(1)];
  const run = take(RUN_COLUMNS.length);
  const executionNames = names(EXECUTION_COLUMNS).filter((name) => name !== 'called');
  const executionInsert = `insert into ${table('executions')} (run_id, ${executionNames.join(', ')})
      select $1, ${executionNames.join(', ')} from batch_executions`;
  const runSets = RUN_COLUMNS.map((name, index) => `${name} = $${run + index}`).join(', ');
  const text = `with
    write_events as (insert into ${table('events')} (run_id, ${names(EVENT_COLUMNS).join(', ')})
      select $1, e.* from ${events}),
    removed_steps as (delete from ${table('steps')} where run_id = $1 and step_id = any($${removed}::text[])),
    write_steps as (insert into ${table('steps')} (run_id, ${names(STEP_COLUMNS).join(', ')})
      select $1, s.* from ${steps}
      on conflict (run_id, step_id) do update set ${updates(names(STEP_COLUMNS).slice(1))}),
    batch_executions as (select * from ${executions}),
    called_executions as (${executionInsert} where called
      on conflict (execution_id) do update set run_id = excluded.run_id, ${updates(executionNames.slice(1))}),
    finished_executions as (${executionInsert} where not called
      on conflict (execution_id) do update set ${updates(RESULT_COLUMNS)}
      where ${table('executions')}.run_id = $1),
    write_approvals as (insert into ${table('approvals')} (run_id, ${names(APPROVAL_COLUMNS).join(', ')})
      select $1, a.* from ${approvals}),
    write_model_calls as (insert into ${table('model_calls')} (run_id, ${names(MODEL_CALL_COLUMNS).join(', ')})
      select $1, m.* from ${modelCalls}),
    write_blobs as (insert into ${table('blobs')} (sha256, size, content) select b.* from ${blobs}
      on conflict (sha256) do nothing),
    ended_cancel as (delete from ${table('cancel_requests')} where $${ended}::boolean and run_id = $1),
    ended_live as (delete from ${table('live_output')} where $${ended}::boolean and run_id = $1),
    ended_queue as (update ${table('work_queue')} set state = 'done', result_status = $${endStatus}::text,
      finished_at = $${endAt}::timestamptz, claimed_by = null, claim_expires_at = null, last_error = null
      where $${ended}::boolean and run_id = $1 and state <> 'done')
    update ${table('runs')} set ${runSets} where id = $1`;
  return statement(text);
});

function eventColumns(events: readonly RunEvent[], threshold: number, blobs: BlobRow[]): Columns {
  return columnsOf(events, EVENT_COLUMNS.length, (event) => {
    const packed = packEvent(event, threshold);
    blobs.push(...packed.blobs);
    return [event.seq, event.type, event.at, packed.payload, packed.refs ? JSON.stringify(packed.refs) : null];
  });
}

function stepColumns(fold: FoldedRun, stepIds: ReadonlySet<string>): Columns {
  const present = [...stepIds].filter((stepId) => fold.steps.has(stepId));
  return columnsOf(present, STEP_COLUMNS.length, (stepId) => {
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
  return columnsOf(changed, EXECUTION_COLUMNS.length, (execution) => {
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

function decisionColumns(changes: FoldChanges): Columns {
  const approvals = columnsOf(changes.approvals, APPROVAL_COLUMNS.length, (event) => [
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
  const modelCalls = columnsOf(changes.modelCalls, MODEL_CALL_COLUMNS.length, (event) => [
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
  return [...approvals, ...modelCalls];
}

function runValues(fold: FoldedRun): unknown[] {
  const summary = summarizeRun(fold);
  return [
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
  ];
}

/**
 * Writes a batch: its journal rows, and `runs`, `steps`, `executions`, `approvals` and `model_calls`
 * brought up to core's fold, for what the batch changed (`changes`, filled by `applyEvent`). One
 * prepared statement: one round trip however many tables.
 */
export async function writeBatch(
  client: Queryable,
  schema: string,
  fold: FoldedRun,
  changes: FoldChanges,
  events: readonly RunEvent[],
  threshold: number,
): Promise<void> {
  const blobs: BlobRow[] = [];
  // A step that left and came back in the batch is written, not deleted: one statement cannot do both to a row.
  const removed = [...changes.removedSteps].filter((stepId) => !changes.steps.has(stepId));
  const end = events.find((event) => event.type === 'run-end');
  const values = [
    fold.runId,
    ...eventColumns(events, threshold, blobs),
    removed,
    ...stepColumns(fold, changes.steps),
    ...executionColumns(fold, changes.executions, (events[0] as RunEvent).seq, threshold, blobs),
    ...decisionColumns(changes),
    ...columnsOf([...new Map(blobs.map((blob) => [blob.sha256, blob])).values()], BLOB_COLUMNS.length, (blob) => [
      blob.sha256,
      blob.size,
      blob.content,
    ]),
    end !== undefined,
    end ? (end as { status?: string }).status : null,
    end ? end.at : null,
    ...runValues(fold),
  ];
  await runStatement(client, writeStatement(schema), values);
}
