import {
  ErrorCodes,
  type ExecutionRecord,
  type RunEvent,
  type RunSummary,
  StepwiseError,
  type TokenUsage,
} from '@stepwise/core';
import { type ApprovalRecord, exitCodeOf, type ToolCallEvent, type ToolResultEvent } from '@stepwise/core/store';
import type Database from 'better-sqlite3';
import { decodeEvent, decodeJson, type EventRow, eventColumns, type StoredValues } from './blob-codec.js';
import { ChunkReader } from './event-chunks.js';
import type { StepRecord } from './step-record.js';
import { decodeOptionalTime, decodeTime } from './time-codec.js';
import { eventOfRun, RUN_KEY_SHIFT } from './view-sql.js';

/** The `runs_view` columns a RunSummary is made of. */
export interface RunSummaryRow {
  readonly key: number;
  readonly id: string;
  readonly plan_id: string;
  readonly plan_digest: string;
  readonly engine: string;
  readonly goal: string | null;
  readonly status: string;
  readonly parent_run_id: string | null;
  readonly created_at: string;
  readonly updated_at: string;
  readonly finished_at: string | null;
  readonly last_seq: number;
  readonly usage: string | null;
}

export const SUMMARY_COLUMNS = [
  'key',
  'id',
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
  'usage',
] as const;

interface ExecutionRow {
  readonly run_key: number;
  readonly run_id: string;
  readonly call_seq: number;
  readonly result_seq: number | null;
  readonly plan_id: string;
  readonly plan_digest: string;
  readonly goal: string | null;
  readonly authorization: string | null;
  readonly description: string | null;
}

interface ApprovalRow {
  readonly execution_id: string;
  readonly step_id: string;
  readonly decision: ApprovalRecord['decision'];
  readonly source: ApprovalRecord['source'];
  readonly decided_by: string | null;
  readonly reason: string | null;
  readonly at: string | number;
}

export interface StepRow {
  readonly step_id: string;
  readonly status: string;
  readonly attempt: number;
  readonly tool: string | null;
  readonly description: string | null;
  readonly execution_id: string | null;
  readonly started_at: string | number | null;
  readonly ended_at: string | number | null;
  readonly duration_ms: number | null;
  readonly tool_called: number;
  readonly idempotent: number | null;
  readonly output: string | null;
  readonly output_sha256: string | null;
  readonly output_from_execution: number;
  readonly error: string | null;
  readonly usage: string | null;
}

interface ExecutionResultRow {
  readonly run_key: number;
  readonly result_seq: number | null;
  readonly result: string | null;
  readonly result_sha256: string | null;
}

const orUndefined = <T>(value: T | null): T | undefined => (value === null ? undefined : value);

/**
 * Reads the journal and builds what the fold would: summaries from the `runs` and `steps`
 * projections, audit bundles from the events of the execution themselves.
 */
export class JournalReader {
  readonly #path: string;
  readonly #readPage: Database.Statement<[number, string, number], EventRow>;
  readonly #readEvent: Database.Statement<[number, number], EventRow>;
  readonly #readEventOfRun: Database.Statement<[string, number], EventRow>;
  readonly #readBlob: Database.Statement<[string], string>;
  readonly #selectExecutionResult: Database.Statement<[string, string], ExecutionResultRow>;
  readonly #selectSummary: Database.Statement<[string], RunSummaryRow>;
  readonly #selectStepCounts: Database.Statement<[number], { status: string; count: number }>;
  readonly #selectExecution: Database.Statement<[string], ExecutionRow>;
  readonly #selectApprovals: Database.Statement<[number, string, string], ApprovalRow>;
  /** Blobs and pieces, as events refer to them. */
  readonly #values: StoredValues;

  constructor(sqlite: Database.Database, path: string) {
    this.#path = path;
    this.#readPage = sqlite.prepare(
      `select ${eventColumns('e')} from runs r join events e
         on ${eventOfRun('e', 'r')} and e.id > r.key * ${RUN_KEY_SHIFT} + max(?, 0)
       where r.id = ? order by e.id limit ?`,
    );
    this.#readEvent = sqlite.prepare(`select ${eventColumns('e')} from events e where id = ? * ${RUN_KEY_SHIFT} + ?`);
    this.#readEventOfRun = sqlite.prepare(
      `select ${eventColumns('e')} from events e
       where id = (select key from runs where id = ?) * ${RUN_KEY_SHIFT} + ?`,
    );
    this.#readBlob = sqlite.prepare<[string], string>('select content from blobs where sha256 = ?').pluck();
    this.#values = { blob: this.readBlob, chunks: new ChunkReader(sqlite, path) };
    this.#selectExecutionResult = sqlite.prepare(
      `select x.run_key, x.result_seq, x.result, x.result_sha256 from executions x join runs r on r.key = x.run_key
       where x.execution_id = ? and r.id = ?`,
    );
    this.#selectSummary = sqlite.prepare(
      `select ${SUMMARY_COLUMNS.join(', ')} from runs_view where id = ? and last_seq > 0`,
    );
    this.#selectStepCounts = sqlite.prepare(
      'select status, count(*) as count from steps where run_key = ? group by status',
    );
    this.#selectExecution = sqlite.prepare(
      `select x.run_key, r.id as run_id, x.call_seq, x.result_seq, r.plan_id, r.plan_digest, r.goal, r.authorization,
         s.description
       from executions x
       join runs r on r.key = x.run_key
       left join steps s on s.run_key = x.run_key and s.step_id = x.step_id
       where x.execution_id = ?`,
    );
    this.#selectApprovals = sqlite.prepare(
      `select execution_id, step_id, decision, source, decided_by, reason, at from approvals
       where run_key = ? and (execution_id = ? or step_id = ?) order by seq`,
    );
  }

  readonly readBlob = (sha256: string): string => {
    const content = this.#readBlob.get(sha256);
    if (content === undefined) {
      throw new StepwiseError(
        ErrorCodes.STORE_UNAVAILABLE,
        `SQLite store ${this.#path}: blob ${sha256} is missing; the database was damaged outside Stepwise`,
        { location: this.#path },
      );
    }
    return content;
  };

  page(runId: string, afterSeq: number, limit: number): RunEvent[] {
    const rows = this.#readPage.all(afterSeq, runId, limit);
    const events: RunEvent[] = [];
    const first = rows[0]?.seq ?? 0;
    // A step-end whose output is its tool-result's finds it among the page's earlier events.
    const eventAt = (seq: number): RunEvent | undefined =>
      seq >= first ? events[seq - first] : this.#eventOfRun(runId, seq);
    for (const row of rows) events.push(decodeEvent(runId, row, this.#values, eventAt));
    return events;
  }

  event(runId: string, runKey: number, seq: number): RunEvent | undefined {
    const row = this.#readEvent.get(runKey, seq);
    return row ? decodeEvent(runId, row, this.#values, (before) => this.event(runId, runKey, before)) : undefined;
  }

  #eventOfRun(runId: string, seq: number): RunEvent | undefined {
    const row = this.#readEventOfRun.get(runId, seq);
    return row ? decodeEvent(runId, row, this.#values, (before) => this.#eventOfRun(runId, before)) : undefined;
  }

  summary(runId: string): RunSummary | undefined {
    const row = this.#selectSummary.get(runId);
    return row ? this.summarize(row) : undefined;
  }

  summarize(row: RunSummaryRow): RunSummary {
    const stepCounts: Record<string, number> = {};
    let stepCount = 0;
    for (const { status, count } of this.#selectStepCounts.all(row.key)) {
      stepCounts[status] = count;
      stepCount += count;
    }
    return {
      runId: row.id,
      planId: row.plan_id,
      planDigest: row.plan_digest,
      engine: row.engine,
      goal: orUndefined(row.goal),
      status: row.status as RunSummary['status'],
      parentRunId: orUndefined(row.parent_run_id),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      finishedAt: orUndefined(row.finished_at),
      lastSeq: row.last_seq,
      stepCount,
      stepCounts,
      usage: row.usage === null ? undefined : (JSON.parse(row.usage) as TokenUsage),
    };
  }

  execution(executionId: string): ExecutionRecord | undefined {
    const row = this.#selectExecution.get(executionId);
    if (!row) return undefined;
    const call = this.event(row.run_id, row.run_key, row.call_seq) as ToolCallEvent | undefined;
    if (call?.type !== 'tool-call') return undefined;
    const result =
      row.result_seq === null
        ? undefined
        : (this.event(row.run_id, row.run_key, row.result_seq) as ToolResultEvent | undefined);
    const approvals = this.#selectApprovals.all(row.run_key, executionId, call.stepId).map(
      (approval): ApprovalRecord => ({
        executionId: approval.execution_id,
        stepId: approval.step_id,
        decision: approval.decision,
        source: approval.source,
        by: orUndefined(approval.decided_by),
        reason: orUndefined(approval.reason),
        at: decodeTime(approval.at),
      }),
    );
    return {
      executionId,
      runId: row.run_id,
      stepId: call.stepId,
      attempt: call.attempt,
      turn: call.turn,
      tool: call.tool,
      effect: call.effect,
      args: call.args,
      startedAt: call.at,
      finishedAt: result?.at,
      status: result?.status ?? 'running',
      durationMs: result?.durationMs,
      exitCode: exitCodeOf(result?.output, result?.error),
      error: result?.error,
      output: result?.output,
      artifacts: result?.artifacts ?? [],
      why: {
        planId: row.plan_id,
        planDigest: row.plan_digest,
        goal: orUndefined(row.goal),
        stepDescription: orUndefined(row.description),
        authorization: row.authorization === null ? undefined : JSON.parse(row.authorization),
        approvals,
      },
    };
  }

  /** An execution's output: its row's (written before schema version 5, or a blob's), else its tool-result's. */
  #executionOutput(runId: string, executionId: string): unknown {
    const row = this.#selectExecutionResult.get(executionId, runId);
    if (!row) return undefined;
    if (row.result !== null || row.result_sha256 !== null)
      return decodeJson(row.result, row.result_sha256, this.readBlob);
    if (row.result_seq === null) return undefined;
    return (this.event(runId, row.run_key, row.result_seq) as { output?: unknown } | undefined)?.output;
  }

  step(runId: string, row: StepRow): StepRecord {
    return {
      runId,
      stepId: row.step_id,
      status: row.status as StepRecord['status'],
      attempt: row.attempt,
      tool: orUndefined(row.tool),
      description: orUndefined(row.description),
      executionId: orUndefined(row.execution_id),
      startedAt: orUndefined(decodeOptionalTime(row.started_at)),
      endedAt: orUndefined(decodeOptionalTime(row.ended_at)),
      durationMs: orUndefined(row.duration_ms),
      toolCalled: row.tool_called === 1,
      idempotent: row.idempotent === null ? undefined : row.idempotent === 1,
      output:
        row.output_from_execution === 1 && row.execution_id !== null
          ? this.#executionOutput(runId, row.execution_id)
          : decodeJson(row.output, row.output_sha256, this.readBlob),
      error: row.error === null ? undefined : JSON.parse(row.error),
      usage: row.usage === null ? undefined : (JSON.parse(row.usage) as TokenUsage),
    };
  }
}
