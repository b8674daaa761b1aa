import { executionRecord, type FoldedRun, foldRun, type RunEvent, summarizeRun } from '@stepwise/core';
import { expect } from 'vitest';
import type { SqliteStore } from '../src/index.js';

/** What `listSteps` must say about each step, from the fold. */
export function stepsFromFold(run: FoldedRun) {
  return [...run.steps.values()].map((step) => ({
    stepId: step.stepId,
    status: step.status,
    attempt: step.attempt,
    executionId: step.executionId,
    startedAt: step.startedAt,
    toolCalled: step.toolCalled,
    idempotent: step.idempotent,
    usage: step.usage,
    output: step.result?.output,
    error: step.result?.error,
    durationMs: step.result?.durationMs,
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
  const steps = (await store.listSteps(runId)).map((step) => ({
    stepId: step.stepId,
    status: step.status,
    attempt: step.attempt,
    executionId: step.executionId,
    startedAt: step.startedAt,
    toolCalled: step.toolCalled,
    idempotent: step.idempotent,
    usage: step.usage,
    output: step.output,
    error: step.error,
    durationMs: step.durationMs,
  }));
  expect(steps).toEqual(stepsFromFold(run));
  for (const executionId of executionIds ?? run.executions.keys()) {
    expect(await store.getExecution(executionId)).toEqual(executionRecord(run, executionId));
  }
  return run;
}
