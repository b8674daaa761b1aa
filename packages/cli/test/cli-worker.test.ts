import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { createPostgresStore, enqueue, type PostgresStore } from '@stepwise/store-postgres';
import { startThrowawayPostgres, type ThrowawayPostgres } from '@stepwise/store-postgres/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '../src/create-runner.js';
import { assertBuilt, createWorkspace, runCli, startCli } from './helpers.js';

let server: ThrowawayPostgres | undefined;
try {
  server = await startThrowawayPostgres();
} catch (error) {
  console.warn(`cli: skipping the worker command tests: ${(error as Error).message}`);
}

/** Sessions of the server whose last statement was a LISTEN: a worker listening for its queue's news. */
async function listeningSessions(store: PostgresStore): Promise<number> {
  const { rows } = await store.connection.pool.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where query ilike 'listen %'",
  );
  return rows[0]?.n ?? 0;
}

/** A worker a failed test left running would outlive the test run, retrying a server that is gone. */
function stopIfRunning(child: ChildProcess | undefined): void {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** A workspace configured for the Postgres store in `schema`, and a store of the test's own on it. */
async function postgresWorkspace(schema: string) {
  const workspace = await createWorkspace();
  await workspace.write('stepwise.config.json', {
    engine: 'dag',
    store: { kind: 'postgres', url: server?.url, schema },
    leaseTtlMs: 2_000,
    approvals: { write: 'auto' },
  });
  return { workspace, store: createPostgresStore({ connectionString: server?.url as string, schema }) };
}

/** `stepwise worker …` started in `directory`, with what it prints gathered. */
function startWorker(args: readonly string[], directory: string) {
  const child = startCli(['worker', ...args], { cwd: directory });
  const output = { stdout: '', stderr: '' };
  child.stdout?.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString();
  });
  return { child, output };
}

/** Waits until `stepwise worker` printed its first line: it is claiming from then on. */
async function workerReady(output: () => string, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!output().includes('"worker"')) {
    if (Date.now() > deadline) throw new Error(`the worker never started: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!server)('stepwise worker', () => {
  beforeAll(assertBuilt);
  afterAll(() => server?.close());

  it('runs plans enqueued in Postgres with the configured engine and tools, and stops on SIGTERM', async () => {
    const { workspace, store } = await postgresWorkspace('cli_worker');
    let child: ChildProcess | undefined;
    try {
      const worker = startWorker(['--concurrency', '2', '--tool-limits', 'file_write=1'], workspace.directory);
      child = worker.child;
      const { output } = worker;
      const plan = makePlan([
        { id: 'write', tool: 'file_write', args: { path: 'out.txt', contents: 'from a worker' } },
      ]);
      const { runId } = await enqueue(plan, { store });
      const deadline = Date.now() + 45_000;
      while ((await store.getRun(runId))?.status !== 'completed') {
        if (Date.now() > deadline)
          throw new Error(`the run did not complete\nstdout: ${output.stdout}\nstderr: ${output.stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await readFile(path.join(workspace.directory, 'out.txt'), 'utf8')).toBe('from a worker');
      // Idle again, it listens for news of its queue instead of polling.
      const listening = Date.now() + 10_000;
      while ((await listeningSessions(store)) === 0) {
        if (Date.now() > listening) {
          const { rows } = await store.connection.pool.query('select state, query from pg_stat_activity');
          throw new Error(`the idle worker never listened\nstderr: ${output.stderr}\n${JSON.stringify(rows)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      child.kill('SIGTERM');
      const code = await new Promise((resolve) => child?.once('close', resolve));
      expect(code).toBe(0);
      expect(output.stdout).toContain(`{"runId":"${runId}","status":"completed"}`);
      // `stepwise runs` reads the same shared journal.
      const runs = await runCli(['runs', '--json'], { cwd: workspace.directory });
      expect(JSON.parse(runs.stdout).map((run: { runId: string }) => run.runId)).toEqual([runId]);
    } finally {
      stopIfRunning(child);
      await store.close();
      await workspace.dispose();
    }
  });

  it('polls without listening with --no-notify, and still runs what is enqueued', async () => {
    const { workspace, store } = await postgresWorkspace('cli_worker_poll');
    let child: ChildProcess | undefined;
    try {
      const worker = startWorker(['--no-notify'], workspace.directory);
      child = worker.child;
      const { output } = worker;
      await workerReady(() => output.stdout, '--no-notify');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await listeningSessions(store)).toBe(0);
      const { runId } = await enqueue(
        makePlan([{ id: 'write', tool: 'file_write', args: { path: 'polled.txt', contents: 'polled' } }]),
        { store },
      );
      const deadline = Date.now() + 30_000;
      while ((await store.getRun(runId))?.status !== 'completed') {
        if (Date.now() > deadline) throw new Error(`the run did not complete\nstdout: ${output.stdout}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await listeningSessions(store)).toBe(0);
      child.kill('SIGTERM');
      expect(await new Promise((resolve) => child?.once('close', resolve))).toBe(0);
    } finally {
      stopIfRunning(child);
      await store.close();
      await workspace.dispose();
    }
  });

  it('enqueues a plan for the workers and, with --wait, exits with the run’s status', async () => {
    const workspace = await createWorkspace();
    try {
      await workspace.write('stepwise.config.json', {
        engine: 'dag',
        store: { kind: 'postgres', url: server?.url, schema: 'cli_enqueue' },
        leaseTtlMs: 2_000,
        approvals: { write: 'auto' },
      });
      await workspace.write(
        'good.json',
        makePlan([{ id: 'write', tool: 'file_write', args: { path: 'queued.txt', contents: 'queued' } }]),
      );
      // A step that fails: its file is outside the workspace (E402, exit 32 as `stepwise run` gives).
      await workspace.write(
        'bad.json',
        makePlan([{ id: 'escape', tool: 'file_write', args: { path: '../escape.txt', contents: 'x' } }]),
      );
      await workspace.write('invalid.json', makePlan([{ id: 'nope', tool: 'no_such_tool', args: {} }]));
      const worker = startCli(['worker'], { cwd: workspace.directory });
      try {
        const good = await runCli(['enqueue', 'good.json', '--wait'], { cwd: workspace.directory, timeoutMs: 60_000 });
        expect(good.code).toBe(0);
        const [enqueued, ended] = good.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line));
        expect(enqueued).toMatchObject({ queue: 'default', created: true });
        expect(ended).toEqual({ runId: enqueued.runId, status: 'completed' });
        expect(await readFile(path.join(workspace.directory, 'queued.txt'), 'utf8')).toBe('queued');

        const bad = await runCli(['enqueue', 'bad.json', '--wait', '--run-id', 'run_escape'], {
          cwd: workspace.directory,
          timeoutMs: 60_000,
        });
        expect(bad.code).toBe(32);
        expect(bad.stdout).toContain('{"runId":"run_escape","status":"failed"}');

        // Without --wait it returns once the run is queued; an invalid plan is never queued (exit 2).
        const queued = await runCli(['enqueue', 'good.json', '--queue', 'elsewhere'], { cwd: workspace.directory });
        expect(queued.code).toBe(0);
        expect(JSON.parse(queued.stdout)).toMatchObject({ queue: 'elsewhere', created: true });
        const invalid = await runCli(['enqueue', 'invalid.json'], { cwd: workspace.directory });
        expect(invalid.code).toBe(2);
        expect(invalid.stderr).toContain('not enqueued');
        expect(invalid.stdout).toBe('');
      } finally {
        worker.kill('SIGTERM');
        await new Promise((resolve) => worker.once('close', resolve));
      }
    } finally {
      await workspace.dispose();
    }
  }, 120_000);

  it('refuses to start without a Postgres store (E601)', async () => {
    const workspace = await createWorkspace();
    try {
      await workspace.write('stepwise.config.json', { engine: 'dag' });
      const outcome = await runCli(['worker'], { cwd: workspace.directory });
      expect(outcome.code).not.toBe(0);
      expect(outcome.stderr).toContain('E601');
      expect(outcome.stderr).toContain('"kind": "postgres"');
    } finally {
      await workspace.dispose();
    }
  });
});

describe('the Postgres store’s address in the configuration', () => {
  it('refuses text that is not a URL, or a URL of another database, as E601 at /store/url', async () => {
    for (const url of ['not a url', 'mysql://user:secret@db.example/app']) {
      const error = await createRunner({ store: { kind: 'postgres', url }, engine: 'dag' }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(StepwiseError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: ErrorCodes.CONFIG_INVALID, location: '/store/url' });
      expect((error as Error).message).toContain('store.url');
      expect((error as Error).message).not.toContain('secret');
    }
  });

  it('says so from the command line, for the worker and for enqueue (exit 2)', async () => {
    assertBuilt();
    const workspace = await createWorkspace();
    try {
      await workspace.write('stepwise.config.json', {
        engine: 'dag',
        store: { kind: 'postgres', url: 'mysql://db/app' },
      });
      await workspace.write('plan.json', makePlan([{ id: 'one', tool: 'file_read', args: { path: 'x' } }]));
      for (const args of [['worker'], ['enqueue', 'plan.json']]) {
        const outcome = await runCli(args, { cwd: workspace.directory });
        expect(outcome.code).toBe(2);
        expect(outcome.stderr).toContain('E601 store.url in the configuration');
      }
      const slots = await runCli(['worker', '--takeover-slots', 'many'], { cwd: workspace.directory });
      expect(slots.code).toBe(2);
      expect(slots.stderr).toContain('--takeover-slots must be a positive integer');
    } finally {
      await workspace.dispose();
    }
  });
});
