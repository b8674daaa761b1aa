import { type RunEvent, type RunStore, readAll, verifyJournal } from '@stepwise/core';
import type { FoldedRun, Lease } from '@stepwise/core/store';
import {
  checkStoreAgainstFold,
  type Draw,
  firstDifference,
  type GeneratedJournal,
  linkJournal,
  randomJournals,
} from '@stepwise/core/testing';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { codeAgentEvents, codeAgentViewDifferences, type ViewCounts } from './code-agent-views.js';
import { testPostgres } from './postgres-server.js';

const postgres = await testPostgres();
// Each case is 1–3 journals and dozens of round trips to the server: 550 cases give over 1,000
// journals (the count is checked below) in about two minutes on a 2-core machine.
const RUNS = Number(process.env.STEPWISE_PROPERTY_RUNS ?? 550);
const KEY = 'a journal key for the property test';

/** Appends through one store or the other (two processes on one schema); reads from the first. */
function twoWriters(first: PostgresStore, second: PostgresStore, draw: Draw): RunStore {
  return {
    append: (runId: string, events: readonly RunEvent[], lease?: Lease) =>
      (draw(0, 3) === 3 ? second : first).append(runId, events, lease),
    read: (runId, afterSeq) => first.read(runId, afterSeq),
    getRun: (runId) => first.getRun(runId),
    listRuns: (filter) => first.listRuns(filter),
    getExecution: (executionId) => first.getExecution(executionId),
    acquireLease: (runId, owner, ttlMs) => first.acquireLease(runId, owner, ttlMs),
    renewLease: (lease) => first.renewLease(lease),
    releaseLease: (lease) => first.releaseLease(lease),
    close: async () => undefined,
  };
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());
const round = (value: number | undefined) => (value === undefined ? null : Math.round(value));

/** The `steps`, `approvals` and `model_calls` tables and the code agent's views, against the fold. */
async function tableDifferences(
  store: PostgresStore,
  journal: GeneratedJournal,
  fold: FoldedRun,
  shown: ViewCounts,
): Promise<string[]> {
  const { runId } = journal;
  const steps = await store.db.selectFrom('steps').selectAll().where('run_id', '=', runId).orderBy('step_id').execute();
  const expectedSteps = [...fold.steps.values()]
    .sort((a, b) => (a.stepId < b.stepId ? -1 : 1))
    .map((step) => ({
      run_id: runId,
      step_id: step.stepId,
      status: step.status,
      attempt: step.attempt,
      tool: step.tool ?? null,
      execution_id: step.executionId ?? null,
      started_at: step.startedAt ? step.startedAt : null,
      duration_ms: round(step.result?.durationMs),
      tool_called: step.toolCalled,
      idempotent: step.idempotent ?? null,
      error_code: step.result?.error?.code ?? null,
      error_message: step.result?.error?.message ?? null,
    }));
  const approvals = await store.db
    .selectFrom('approvals')
    .select(['execution_id', 'step_id', 'decision', 'source', 'decided_by', 'reason', 'at'])
    .where('run_id', '=', runId)
    .orderBy('seq')
    .execute();
  const modelCalls = await store.db
    .selectFrom('model_calls')
    .select(['seq', 'step_id', 'turn', 'model', 'total_tokens', 'latency_ms', 'error_code', 'at'])
    .where('run_id', '=', runId)
    .orderBy('seq')
    .execute();
  const checks: [string, unknown, unknown][] = [
    ['steps', steps.map((row) => ({ ...row, started_at: iso(row.started_at) })), expectedSteps],
    [
      'approvals',
      approvals.map((row) => ({ ...row, at: iso(row.at) })),
      fold.approvals.map((approval) => ({
        execution_id: approval.executionId,
        step_id: approval.stepId,
        decision: approval.decision,
        source: approval.source,
        decided_by: approval.by ?? null,
        reason: approval.reason ?? null,
        at: approval.at,
      })),
    ],
    [
      'model_calls',
      modelCalls.map((row) => ({ ...row, at: iso(row.at) })),
      fold.modelCalls.map((call) => ({
        seq: call.seq,
        step_id: call.stepId,
        turn: call.turn,
        model: call.model,
        total_tokens: call.usage?.totalTokens ?? null,
        latency_ms: round(call.latencyMs),
        error_code: call.error?.code ?? null,
        at: call.at,
      })),
    ],
  ];
  const problems = checks.flatMap(([table, actual, expected]) => {
    const found = firstDifference(actual, expected);
    return found ? [`${table} ${found}`] : [];
  });
  return [...problems, ...(await codeAgentViewDifferences(store, runId, journal.events, shown))];
}

describe.skipIf(!postgres)("the Postgres store against core's fold", () => {
  const url = postgres?.url as string;
  const schema = `property_${process.pid}`;
  // A fold cache of 2 runs makes appends fold runs again from the journal; the second store appends
  // as another process would.
  const first = createPostgresStore({ connectionString: url, schema, blobThresholdBytes: 64, foldCacheSize: 2 });
  const second = createPostgresStore({ connectionString: url, schema, blobThresholdBytes: 64 });
  afterAll(async () => {
    await Promise.all([first.close(), second.close()]);
    postgres?.server?.close();
  });

  it(`agrees on ${RUNS} cases of random journals (STEPWISE_PROPERTY_RUNS): reads, summaries, lists, audit bundles, tables`, async () => {
    await Promise.all([first.ready, second.ready]);
    let count = 0;
    let journalCount = 0;
    const shown: ViewCounts = { attempts: 0, validations: 0, rollbacks: 0 };
    await fc.assert(
      fc.asyncProperty(fc.gen(), async (g) => {
        const draw: Draw = (min, max) => g(fc.integer, { min, max });
        const planId = `plan_${count}`;
        // Every other run chained, half of those keyed: a chain value comes back as it went in.
        // The extension events are the code agent's, so that its views have rows to be checked.
        const options = { prefix: `case_${count++}`, planId, extensionEvents: codeAgentEvents };
        const journals = randomJournals(draw, options).map((journal, index) =>
          index % 2 === 0
            ? journal
            : { ...journal, events: linkJournal(journal.events, index % 4 === 1 ? {} : { journalKey: KEY }) },
        );
        journalCount += journals.length;
        const problems = await checkStoreAgainstFold(twoWriters(first, second, draw), journals, draw, {
          planId,
          views: (journal, fold) => tableDifferences(first, journal, fold, shown),
        });
        expect(problems).toEqual([]);
        for (const [index, journal] of journals.entries()) {
          if (index % 2 === 0) continue;
          const keyed = index % 4 !== 1;
          const events = await readAll(first, journal.runId);
          expect(verifyJournal(journal.runId, events, keyed ? { journalKey: KEY } : {})).toMatchObject({
            ok: true,
            integrity: keyed ? 'keyed' : 'unkeyed',
          });
        }
      }),
      { numRuns: RUNS },
    );
    // fast-check may shrink after a failure, so this counts journals only of a passing run.
    if (process.env.STEPWISE_PROPERTY_RUNS === undefined) expect(journalCount).toBeGreaterThanOrEqual(1000);
    // The code agent's views were compared with rows in them, not only empty with empty: about one
    // journal in six has an attempt, one in eleven a rollback.
    if (journalCount >= 200) {
      expect(shown.attempts / journalCount).toBeGreaterThan(0.08);
      expect(shown.validations / journalCount).toBeGreaterThan(0.08);
      expect(shown.rollbacks / journalCount).toBeGreaterThan(0.04);
    }
  }, 900_000);
});
