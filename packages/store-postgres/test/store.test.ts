import { ErrorCodes, type RunEvent, readAll, StepwiseError } from '@stepwise/core';
import { JOURNAL_VERSION } from '@stepwise/core/store';
import { makePlan } from '@stepwise/core/testing';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { testPostgres } from './postgres-server.js';
import { query } from './worker-processes.js';

const postgres = await testPostgres();
let schemas = 0;

const at = () => new Date().toISOString();
const plan = makePlan([{ id: 'a', tool: 'echo', args: {} }], { id: 'plan_store' });

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  return StepwiseError.isInstance(error) ? error.code : String(error);
}

describe.skipIf(!postgres)('store-postgres specifics', () => {
  const url = postgres?.url as string;
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    postgres?.server?.close();
  });
  const open = (options: Partial<Parameters<typeof createPostgresStore>[0]> = {}) => {
    const store = createPostgresStore({
      connectionString: url,
      schema: `store_${process.pid}_${schemas++}`,
      ...options,
    });
    stores.push(store);
    return store;
  };

  it('answers what the code agent tried in plain SQL: attempts, validations (output from blobs), rollbacks', async () => {
    const store = open({ blobThresholdBytes: 200 });
    const runId = 'run_solve_views';
    const solvePlan = makePlan([{ id: 'fix', description: 'Fix it.' }], { id: 'plan_fix' });
    const longOutput = `not ok 1 - half price\n${'  expected 15, got 29.4\n'.repeat(30)}`;
    const base = (seq: number) => ({ runId, seq, at: at() });
    const events = [
      { type: 'run-start', planId: solvePlan.id, planDigest: 'd', plan: solvePlan, engine: 'solve', ...base(1) },
      { type: 'step-start', stepId: 'fix', tool: undefined, attempt: 1, executionId: 'ex_fix_1', ...base(2) },
      {
        type: 'validation-end',
        stepId: 'fix',
        attempt: 1,
        validationRunId: 'run_validate_1',
        command: ['node', '--test'],
        exitCode: 1,
        passed: false,
        failingTests: [{ name: 'half price', output: 'expected 15, got 29.4' }],
        output: longOutput,
        ...base(3),
      },
      { type: 'workspace-rollback', stepId: 'fix', attempt: 1, restored: ['src/cart.js'], removed: [], ...base(4) },
      {
        type: 'attempt-end',
        stepId: 'fix',
        attempt: 1,
        implementationRunId: 'run_implement_1',
        status: 'succeeded',
        changes: { created: [], modified: ['src/cart.js'], deleted: [] },
        rolledBack: true,
        ...base(5),
      },
    ] as unknown as RunEvent[];
    await store.append(runId, events);
    expect(await readAll(store, runId)).toEqual(events);
    const [validation] = await query<Record<string, unknown>>(
      url,
      `select step_id, attempt, exit_code, passed, failing_count, output, command::text as command
       from ${store.schema}.validations where run_id = $1`,
      [runId],
    );
    expect(validation).toEqual({
      step_id: 'fix',
      attempt: 1,
      exit_code: 1,
      passed: false,
      failing_count: 1,
      output: longOutput,
      command: '["node","--test"]',
    });
    const [stored] = await query<{ inline: string | null }>(
      url,
      `select payload->>'output' as inline from ${store.schema}.events where type = 'validation-end'`,
    );
    expect(stored?.inline).toBeNull();
    const rollbacks = await query(
      url,
      `select attempt, restored::text as restored from ${store.schema}.rollbacks where run_id = $1`,
      [runId],
    );
    expect(rollbacks).toEqual([{ attempt: 1, restored: '["src/cart.js"]' }]);
    const attempts = await query(
      url,
      `select attempt, implementation_run_id, rolled_back from ${store.schema}.attempts where run_id = $1`,
      [runId],
    );
    expect(attempts).toEqual([{ attempt: 1, implementation_run_id: 'run_implement_1', rolled_back: true }]);
  });

  it('keeps large outputs once in blobs and gives them back whole', async () => {
    const store = open({ blobThresholdBytes: 1_000 });
    const big = { text: 'x'.repeat(50_000), nul: 'a\u0000b' };
    const runId = 'run_blobs';
    const events = [
      { type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test', runId, seq: 1, at: at() },
      { type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: 'ex_big', runId, seq: 2, at: at() },
      {
        type: 'tool-call',
        stepId: 'a',
        executionId: 'ex_big',
        attempt: 1,
        tool: 'echo',
        effect: 'read',
        idempotent: true,
        args: {},
        runId,
        seq: 3,
        at: at(),
      },
      {
        type: 'tool-result',
        stepId: 'a',
        executionId: 'ex_big',
        tool: 'echo',
        status: 'succeeded',
        output: big,
        startedAt: at(),
        durationMs: 1.5,
        runId,
        seq: 4,
        at: at(),
      },
    ] as unknown as RunEvent[];
    await store.append(runId, events);
    expect(await readAll(store, runId)).toEqual(events);
    expect((await store.getExecution('ex_big'))?.output).toEqual(big);
    const rows = await query<{ blobs: number; inline: string | null; ref: string | null }>(
      url,
      `select (select count(*)::int from ${store.schema}.blobs) as blobs,
        (select output::text from ${store.schema}.executions) as inline,
        (select output_sha256 from ${store.schema}.executions) as ref`,
    );
    // The output is stored once: the journal and the executions row refer to the same blob.
    expect(rows[0]).toMatchObject({ blobs: 1, inline: null });
    expect(rows[0]?.ref).toMatch(/^[0-9a-f]{64}$/);
  });

  it('answers audit questions in plain SQL through its views', async () => {
    const store = open();
    const runId = 'run_audit';
    await store.append(runId, [
      { type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test', runId, seq: 1, at: at() },
      { type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: 'ex_a', runId, seq: 2, at: at() },
      {
        type: 'tool-call',
        stepId: 'a',
        executionId: 'ex_a',
        attempt: 1,
        tool: 'run_command',
        effect: 'exec',
        idempotent: false,
        args: { argv: ['make'] },
        runId,
        seq: 3,
        at: at(),
      },
      {
        type: 'tool-result',
        stepId: 'a',
        executionId: 'ex_a',
        tool: 'run_command',
        status: 'failed',
        error: { code: 'E304', message: 'make exited with 2', retryable: false, details: { exitCode: 2 } },
        startedAt: at(),
        durationMs: 12,
        runId,
        seq: 4,
        at: at(),
      },
    ] as unknown as RunEvent[]);
    const failed = await query(
      url,
      `select run_id, step_id, tool, success, exit_code, error_code from ${store.schema}.executions_view where success = false`,
    );
    expect(failed).toEqual([
      { run_id: runId, step_id: 'a', tool: 'run_command', success: false, exit_code: 2, error_code: 'E304' },
    ]);
    const journal = await query<{ seq: number; type: string }>(
      url,
      `select seq, type from ${store.schema}.journal where run_id = $1 order by seq`,
      [runId],
    );
    expect(journal.map((row) => row.type)).toEqual(['run-start', 'step-start', 'tool-call', 'tool-result']);
  });

  it('uses the host application’s pool and leaves it open', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const store = open({ connectionString: undefined, pool });
      const lease = await store.acquireLease('run_pool', 'owner', 1_000);
      expect(lease?.token).toBe(1);
      await store.close();
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it('refuses bad input with typed errors and writes nothing', async () => {
    const store = open();
    expect(await codeOf(store.append('', []))).toBe(ErrorCodes.INPUT_INVALID);
    expect(await codeOf(store.append('run_bad', [{ type: 'x' } as unknown as RunEvent]))).toBe(
      ErrorCodes.INPUT_INVALID,
    );
    expect(
      await codeOf(
        store.append('run_bad', [{ type: 'x', at: 'yesterday', seq: 1, runId: 'run_bad' } as unknown as RunEvent]),
      ),
    ).toBe(ErrorCodes.INPUT_INVALID);
    expect(await codeOf(store.acquireLease('run_bad', 'owner', -1))).toBe(ErrorCodes.INPUT_INVALID);
    expect(await codeOf(store.acquireLease('run_bad', 'owner', Number.NaN))).toBe(ErrorCodes.INPUT_INVALID);
    expect(await store.getRun('run_bad')).toBeUndefined();
    expect(await store.listRuns()).toEqual([]);
  });

  it('refuses a schema migrated by a newer version (E504) and an unreachable server (E503, retryable)', async () => {
    const store = open();
    await store.ready;
    await query(url, `insert into ${store.schema}.stepwise_migrations (name, timestamp) values ('9999_future', now())`);
    const newer = open({ schema: store.schema });
    expect(await codeOf(newer.ready)).toBe(ErrorCodes.STORE_SCHEMA_NEWER);
    const away = open({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
    const error = await away.getRun('x').then(
      () => undefined,
      (thrown: unknown) => thrown as StepwiseError,
    );
    expect(error?.code).toBe(ErrorCodes.STORE_UNAVAILABLE);
    expect(error?.retryable).toBe(true);
  });

  it('records the journal format it writes, refuses a schema holding newer journals (E504) and a newer run-start (E506)', async () => {
    const store = open();
    await store.ready;
    expect(await query(url, `select name, value from ${store.schema}.store_metadata`)).toEqual([
      { name: 'journal_version', value: 1 },
    ]);
    const future = {
      type: 'run-start',
      journalVersion: JOURNAL_VERSION + 1,
      planId: plan.id,
      planDigest: 'd',
      plan,
      engine: 'dag',
    };
    const refused = await store
      .append('run_future', [{ ...future, runId: 'run_future', seq: 1, at: at() } as RunEvent])
      .then(
        () => undefined,
        (thrown: unknown) => thrown as StepwiseError,
      );
    expect(refused).toMatchObject({ code: ErrorCodes.JOURNAL_VERSION_UNSUPPORTED, location: 'run_future#1' });
    expect(await store.getRun('run_future')).toBeUndefined();
    await query(
      url,
      `update ${store.schema}.store_metadata set value = ${JOURNAL_VERSION + 1} where name = 'journal_version'`,
    );
    const newer = open({ schema: store.schema });
    const error = await newer.ready.then(
      () => undefined,
      (thrown: unknown) => thrown as StepwiseError,
    );
    expect(error?.code).toBe(ErrorCodes.STORE_SCHEMA_NEWER);
    expect(error?.message).toMatch(
      `journals in format version ${JOURNAL_VERSION + 1}, newer than this release reads (${JOURNAL_VERSION})`,
    );
  });
});

if (!postgres) {
  describe('store-postgres specifics', () => {
    it.skip('needs a Postgres server (see the message above)', () => undefined);
  });
}
