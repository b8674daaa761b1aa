import type { RunEvent } from '@stepwise/core';
import { executionRecord, type FoldedRun, foldRun, summarizeRun } from '@stepwise/core/store';
import { type AppendedJournals, firstDifference, type GeneratedJournal } from '@stepwise/core/testing';
import type Database from 'better-sqlite3';
import { expect } from 'vitest';
import type { SqliteStore } from '../src/index.js';
import { codeAgentViewDifferences, type ViewCounts } from './code-agent-views.js';

/** What `listSteps` must say about each step, from the fold (in the fold's order). */
export function stepsFromFold(run: FoldedRun) {
  return [...run.steps.values()].map((step) => ({
    runId: run.runId,
    stepId: step.stepId,
    status: step.status,
    attempt: step.attempt,
    tool: step.tool,
    description: run.plan?.steps.find((planned) => planned.id === step.stepId)?.description,
    executionId: step.executionId,
    startedAt: step.startedAt,
    endedAt: step.endedAt,
    durationMs: step.result?.durationMs,
    toolCalled: step.toolCalled,
    idempotent: step.idempotent,
    output: step.result?.output,
    error: step.result?.error,
    usage: step.usage,
  }));
}

/**
 * Asserts that the store's projections say what core's fold of `events` says: the run summary,
 * every step, and the audit bundle of each of `executionIds` (default: all of them).
 */
export async function expectProjectionsMatchFold(
  store: SqliteStore,
  runId: string,
  events: readonly RunEvent[],
  executionIds?: Iterable<string>,
): Promise<FoldedRun> {
  const run = foldRun(events, runId);
  expect(await store.getRun(runId)).toEqual(summarizeRun(run));
  expect(await store.listSteps(runId)).toEqual(stepsFromFold(run));
  for (const executionId of executionIds ?? run.executions.keys()) {
    expect(await store.getExecution(executionId)).toEqual(executionRecord(run, executionId));
  }
  return run;
}

const parse = (text: string | null): unknown => (text === null ? undefined : JSON.parse(text));
const orUndefined = <T>(value: T | null): T | undefined => (value === null ? undefined : value);
const blob = (column: string) => `coalesce(${column}, (select content from blobs where sha256 = ${column}_sha256))`;

interface ModelCallRow {
  seq: number;
  step_id: string;
  turn: number;
  model: string;
  request: string | null;
  response: string | null;
  usage: string | null;
  latency_ms: number;
  error: string | null;
  at: string;
}

/** The `approvals` and `model_calls` tables of the run, read in SQL, against the fold. */
function decisionDifferences(sql: Database.Database, runId: string, fold: FoldedRun): string[] {
  const approvals = sql
    .prepare<[string], Record<string, string | null>>(
      'select execution_id, step_id, decision, source, decided_by, reason, at from approvals_view where run_id = ? order by seq',
    )
    .all(runId)
    .map((row) => ({
      executionId: row.execution_id,
      stepId: row.step_id,
      decision: row.decision,
      source: row.source,
      by: orUndefined(row.decided_by),
      reason: orUndefined(row.reason),
      at: row.at,
    }));
  const modelCalls = sql
    .prepare<[string], ModelCallRow>(
      `select seq, step_id, turn, model, ${blob('request')} as request, ${blob('response')} as response, usage,
         latency_ms, error, at from model_calls_view where run_id = ? order by seq`,
    )
    .all(runId)
    .map((row) => ({
      seq: row.seq,
      stepId: row.step_id,
      turn: row.turn,
      model: row.model,
      request: parse(row.request),
      response: parse(row.response),
      usage: parse(row.usage),
      latencyMs: row.latency_ms,
      error: parse(row.error),
      at: row.at,
    }));
  const expectedCalls = fold.modelCalls.map(
    ({ seq, stepId, turn, model, request, response, usage, latencyMs, error, at }) => ({
      seq,
      stepId,
      turn,
      model,
      request,
      response,
      usage,
      latencyMs,
      error,
      at,
    }),
  );
  return [
    ['approvals', firstDifference(approvals, fold.approvals)],
    ['model_calls', firstDifference(modelCalls, expectedCalls)],
  ].flatMap(([table, found]) => (found ? [`${table} ${found}`] : []));
}

/**
 * Everything the SQLite store shows of a run besides the RunStore reads, against core's fold:
 * `listSteps`, `listExecutions` (the executions the run owns, in call order), the approvals and
 * model calls tables, and the code agent's views (`shown` counts the journals whose views had rows).
 * For `checkStoreAgainstFold`'s `views`.
 */
export async function sqliteViewDifferences(
  store: SqliteStore,
  sql: Database.Database,
  journal: GeneratedJournal,
  fold: FoldedRun,
  appended: AppendedJournals,
  shown: ViewCounts,
): Promise<string[]> {
  const problems: string[] = [];
  const steps = firstDifference(await store.listSteps(journal.runId), stepsFromFold(fold));
  if (steps) problems.push(`listSteps ${steps}`);
  const owned = [...fold.executions.values()]
    .filter((execution) => appended.owners.get(execution.executionId) === journal.runId)
    .sort((a, b) => a.callSeq - b.callSeq)
    .map((execution) => executionRecord(fold, execution.executionId));
  const executions = firstDifference(await store.listExecutions(journal.runId), owned);
  if (executions) problems.push(`listExecutions ${executions}`);
  problems.push(
    ...decisionDifferences(sql, journal.runId, fold),
    ...codeAgentViewDifferences(sql, journal.runId, journal.events, shown),
  );
  return problems;
}
