import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, planDigest, type RunResult, type RunStore, readAll, StepwiseError } from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { afterAll, describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';
// @ts-expect-error plain ESM fixture shared with the child process, no types
import { originalPlan, revisionTools } from './fixtures/revise-until-killed.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const childScript = join(here, 'fixtures', 'revise-until-killed.mjs');
const require = createRequire(import.meta.url);

function available(specifier: string): boolean {
  try {
    return existsSync(require.resolve(specifier));
  } catch {
    return false;
  }
}

// The child imports the packages by name, i.e. their built dist (turbo builds before it tests).
const ready = available('@stepwise/store-sqlite') && existsSync(join(here, '..', 'dist', 'index.js'));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!ready)('SIGKILL during a revised run (SQLite file, child process)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-revised-kill-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  });

  it('resumes on the revised plan: nothing removed runs, nothing finished runs again', {
    timeout: 60_000,
  }, async () => {
    const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as {
      createSqliteStore: (options: { path: string }) => RunStore;
    };
    const databasePath = join(directory, 'runs.db');
    const sideFile = join(directory, 'invocations.txt');
    const blockFile = join(directory, 'block');
    writeFileSync(sideFile, '');
    writeFileSync(blockFile, '');
    const runId = 'run_revised_kill';
    child = spawn(process.execPath, [childScript, databasePath, sideFile, blockFile, runId], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += String(chunk)));
    child.stderr?.on('data', (chunk) => (output += String(chunk)));
    const exited = once(child, 'exit');
    const deadline = Date.now() + 30_000;
    while (!existsSync(`${blockFile}.held`)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`the child did not reach "added": ${output}`);
      await pause(10);
    }
    child.kill('SIGKILL');
    expect((await exited)[1]).toBe('SIGKILL');
    expect(output).not.toContain('finished');
    rmSync(blockFile);

    const store = createSqliteStore({ path: databasePath });
    try {
      const before = await readAll(store, runId);
      expect(before.some((event) => event.type === 'run-end')).toBe(false);
      const revise = before.find((event) => event.type === 'plan-revise');
      const addedStart = before.find((event) => event.type === 'step-start' && event.stepId === 'added');
      // Killed after the revision was committed, with a step of the revised part in flight.
      expect(revise && addedStart && revise.seq < addedStart.seq).toBe(true);
      expect(before.some((event) => event.type === 'step-end' && event.stepId === 'added')).toBe(false);

      let result: RunResult | undefined;
      const resumeDeadline = Date.now() + 10_000;
      while (!result) {
        try {
          result = await dagEngine({ tools: revisionTools(sideFile), store }).resume(runId).result;
        } catch (error) {
          // The dead child's lease (400 ms) must run out first.
          if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.LEASE_CONFLICT) throw error;
          if (Date.now() > resumeDeadline) throw error;
          await pause(50);
        }
      }
      expect(result.status).toBe('completed');
      expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
        ['first', 'succeeded'],
        ['added', 'succeeded'],
        ['after', 'succeeded'],
      ]);
      // The reference into "first" resolved from the journal, not from a re-run.
      expect(result.steps.at(-1)?.output).toEqual({ stepId: 'after', value: 'from first' });
      const invocations = readFileSync(sideFile, 'utf8').trim().split('\n');
      // first ran once before the kill; added was in flight (idempotent: once more); old and tail were revised away.
      expect(invocations).toEqual(['first 1', 'added 1', 'added 2', 'after 1']);

      expect(result.plan?.steps.map((step) => step.id)).toEqual(['first', 'added', 'after']);
      expect(result.plan?.revision).toBe(1);
      expect(result.planDigest).toBe(planDigest(result.plan as NonNullable<RunResult['plan']>));
      expect(result.revisions?.map((each) => [each.revision, each.parentDigest])).toEqual([
        [1, planDigest(originalPlan)],
      ]);
      const events = await readAll(store, runId);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      const resumed = events.filter((event) => event.type === 'run-resume');
      expect(resumed.map((event) => event.type === 'run-resume' && event.interrupted)).toEqual([
        [{ stepId: 'added', action: 'rerun' }],
      ]);
      // The store's projection follows the revision too.
      const summary = await store.getRun(runId);
      expect([summary?.planDigest, summary?.stepCount, summary?.status]).toEqual([result.planDigest, 3, 'completed']);
      const folded = foldRun(events);
      expect(folded.status).toBe('completed');
      expect(folded.revisions).toHaveLength(1);
      expect([...folded.steps.keys()].sort()).toEqual(['added', 'after', 'first']);
    } finally {
      await store.close();
    }
  });
});
