import { describe, expect, it } from 'vitest';
import { foldRun, summarizeRun } from '../journal/fold-run.js';
import { createRedactor } from '../journal/redact.js';
import { type RunFilter, type RunStore, readAll } from '../journal/run-store.js';
import { invokeStep } from '../kernel/invoke-step.js';
import { approvePlan } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { finishRun, startRun } from '../run/run-session.js';
import {
  runStartInput,
  type StoreHarness,
  samplePlan,
  stamp,
  storeRunner,
  uniqueRunId,
} from './conformance-support.js';
import { createTestTools, makePlan } from './fixtures.js';

/** A whole run through the kernel: a secret in the arguments, an approval, two steps. */
async function executeSample(store: RunStore, secret = 'hunter2-very-secret') {
  const { registry } = createTestTools();
  const runId = uniqueRunId();
  const authorization = approvePlan(samplePlan, { by: 'alice' });
  const redactor = createRedactor({ secrets: [secret] });
  const journal = await startRun({
    store,
    runId,
    plan: samplePlan,
    engine: 'test',
    authorization,
    redactor,
  });
  const context = {
    runId,
    journal,
    registry,
    approvals: {
      handler: async () => ({
        decision: 'approve' as const,
        by: 'bob',
        reason: 'looks fine',
      }),
    },
  };
  const first = await invokeStep(
    {
      ...(samplePlan.steps[0] as Plan['steps'][0]),
      args: { value: `token ${secret} ghp_${'a'.repeat(36)}` },
    },
    { attempt: 1, references: 'literal' },
    context,
  );
  const second = await invokeStep(
    samplePlan.steps[1] as Plan['steps'][0],
    { attempt: 1, references: 'literal' },
    context,
  );
  const result = await finishRun(journal, {
    plan: samplePlan,
    engine: 'test',
    status: 'completed',
    steps: [first, second],
    durationMs: first.durationMs + second.durationMs,
  });
  return { runId, first, second, result, secret };
}

/** Projections and the audit bundle agree with the journal; no secret comes back from any read. */
export function auditCases(harness: StoreHarness): void {
  const withStore = storeRunner(harness);

  describe('store conformance: projections and audit', () => {
    it('getExecution returns the whole audit bundle', () => withStore(executionIsTheAuditBundle));
    it('never returns a secret from any read', () => withStore(noReadReturnsASecret));
    it('getRun agrees with foldRun of the journal', () => withStore(summaryAgreesWithFold));
    it('lists runs by status, plan and time, newest first', () => withStore(listsRunsByFilter));
  });
}

async function executionIsTheAuditBundle(store: RunStore): Promise<undefined> {
  const { second, runId } = await executeSample(store);
  const record = await store.getExecution(second.executionId);
  expect(record).toBeDefined();
  expect(record?.runId).toBe(runId);
  expect(record?.stepId).toBe('b');
  expect(record?.tool).toBe('note');
  expect(record?.effect).toBe('write');
  expect(record?.args).toEqual({ text: 'hi' });
  expect(record?.status).toBe('succeeded');
  expect(record?.output).toEqual({ written: 2 });
  expect(Date.parse(record?.startedAt ?? '')).not.toBeNaN();
  expect(Date.parse(record?.finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(record?.startedAt ?? ''));
  expect(record?.why.planId).toBe('plan_conformance');
  expect(record?.why.goal).toBe('prove the store');
  expect(record?.why.authorization?.by).toBe('alice');
  expect(record?.why.approvals.map((approval) => [approval.decision, approval.by])).toEqual([['approved', 'bob']]);
  expect(await store.getExecution('ex_missing')).toBeUndefined();
  return undefined;
}

async function noReadReturnsASecret(store: RunStore): Promise<undefined> {
  const { runId, first, secret } = await executeSample(store);
  const everything = JSON.stringify([
    await readAll(store, runId),
    await store.getRun(runId),
    await store.listRuns(),
    await store.getExecution(first.executionId),
  ]);
  expect(everything).not.toContain(secret);
  expect(everything).not.toContain(`ghp_${'a'.repeat(36)}`);
  expect(everything).toContain('[REDACTED]');
  return undefined;
}

async function summaryAgreesWithFold(store: RunStore): Promise<undefined> {
  const { runId } = await executeSample(store);
  const summary = await store.getRun(runId);
  const folded = summarizeRun(foldRun(await readAll(store, runId)));
  expect(summary).toEqual(folded);
  expect(summary?.status).toBe('completed');
  expect(summary?.stepCounts).toEqual({ succeeded: 2 });
  return undefined;
}

async function listsRunsByFilter(store: RunStore): Promise<undefined> {
  const before = new Date(Date.now() - 1000).toISOString();
  const done = await executeSample(store);
  await new Promise((resolve) => setTimeout(resolve, 5));
  const open = uniqueRunId();
  await store.append(open, stamp(open, 1, [runStartInput(makePlan([{ id: 'x', tool: 'echo' }], { id: 'other' }))]));
  const runIds = async (filter: RunFilter) => (await store.listRuns(filter)).map((run) => run.runId);
  expect(await runIds({ since: before })).toEqual([open, done.runId]);
  expect(await runIds({ status: 'completed', since: before })).toEqual([done.runId]);
  expect(await runIds({ status: ['running'], since: before })).toEqual([open]);
  expect(await runIds({ planId: 'other', since: before })).toEqual([open]);
  expect(await runIds({ since: before, limit: 1 })).toEqual([open]);
  expect(await runIds({ since: before, limit: 1, offset: 1 })).toEqual([done.runId]);
  expect(await store.listRuns({ until: before, planId: 'other' })).toEqual([]);
  // Every word, in any case, in the goal, the plan id or the run id; paged like any list.
  expect(await runIds({ since: before, search: 'PROVE store' })).toEqual([done.runId]);
  expect(await runIds({ since: before, search: '  ENGINE  other ' })).toEqual([open]);
  expect(await runIds({ since: before, search: open.toUpperCase() })).toEqual([open]);
  expect(await runIds({ since: before, search: 'test' })).toEqual([open]);
  expect(await runIds({ since: before, search: 'the', limit: 1, offset: 1 })).toEqual([done.runId]);
  expect(await runIds({ since: before, search: 'prove engine' })).toEqual([]);
  expect(await runIds({ since: before, search: '%' })).toEqual([]);
  expect(await runIds({ since: before, search: '' })).toEqual([open, done.runId]);
  return undefined;
}
