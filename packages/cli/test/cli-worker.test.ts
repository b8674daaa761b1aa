import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { makePlan } from '@stepwise/core/testing';
import { createPostgresStore, enqueue } from '@stepwise/store-postgres';
import { startThrowawayPostgres, type ThrowawayPostgres } from '@stepwise/store-postgres/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, createWorkspace, runCli, startCli } from './helpers.js';

let server: ThrowawayPostgres | undefined;
try {
  server = await startThrowawayPostgres();
} catch (error) {
  console.warn(`cli: skipping the worker command tests: ${(error as Error).message}`);
}

describe.skipIf(!server)('stepwise worker', () => {
  beforeAll(assertBuilt);
  afterAll(() => server?.close());

  it('runs plans enqueued in Postgres with the configured engine and tools, and stops on SIGTERM', async () => {
    const workspace = await createWorkspace();
    const store = createPostgresStore({ connectionString: server?.url as string, schema: 'cli_worker' });
    try {
      await workspace.write('stepwise.config.json', {
        engine: 'dag',
        store: { kind: 'postgres', url: server?.url, schema: 'cli_worker' },
        leaseTtlMs: 2_000,
        approvals: { write: 'auto' },
      });
      const child = startCli(['worker', '--concurrency', '2', '--tool-limits', 'file_write=1'], {
        cwd: workspace.directory,
      });
      let stdout = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const plan = makePlan([
        { id: 'write', tool: 'file_write', args: { path: 'out.txt', contents: 'from a worker' } },
      ]);
      const { runId } = await enqueue(plan, { store });
      const deadline = Date.now() + 45_000;
      while ((await store.getRun(runId))?.status !== 'completed') {
        if (Date.now() > deadline) throw new Error(`the run did not complete\nstdout: ${stdout}\nstderr: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await readFile(path.join(workspace.directory, 'out.txt'), 'utf8')).toBe('from a worker');
      child.kill('SIGTERM');
      const code = await new Promise((resolve) => child.once('close', resolve));
      expect(code).toBe(0);
      expect(stdout).toContain(`{"runId":"${runId}","status":"completed"}`);
      // `stepwise runs` reads the same shared journal.
      const runs = await runCli(['runs', '--json'], { cwd: workspace.directory });
      expect(JSON.parse(runs.stdout).map((run: { runId: string }) => run.runId)).toEqual([runId]);
    } finally {
      await store.close();
      await workspace.dispose();
    }
  });

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
