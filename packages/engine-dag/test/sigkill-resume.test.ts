import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, type RunResult, type RunStore, readAll, StepwiseError } from '@stepwise/core';
import { afterAll, describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';
// @ts-expect-error plain ESM fixture shared with the child process, no types
import { killPlan, sideFileTools } from './fixtures/side-file-tools.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const childScript = join(here, 'fixtures', 'run-until-killed.mjs');
const require = createRequire(import.meta.url);

function available(specifier: string): boolean {
  try {
    return existsSync(require.resolve(specifier));
  } catch {
    return false;
  }
}

// The child imports both packages by name, i.e. their built dist (turbo builds before it tests).
const ready = available('@stepwise/store-sqlite') && existsSync(join(here, '..', 'dist', 'index.js'));

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function invocations(sideFile: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of readFileSync(sideFile, 'utf8').split('\n')) {
    if (!line) continue;
    const stepId = line.split(' ')[0] as string;
    counts.set(stepId, (counts.get(stepId) ?? 0) + 1);
  }
  return counts;
}

describe.skipIf(!ready)('resume after a real SIGKILL (SQLite store, child process)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-kill-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  });

  it('never re-executes a step that completed before the kill', { timeout: 60_000 }, async () => {
    const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as {
      createSqliteStore: (options: { path: string }) => RunStore;
    };
    const databasePath = join(directory, 'runs.db');
    const sideFile = join(directory, 'invocations.txt');
    writeFileSync(sideFile, '');
    const runId = 'run_sigkill';
    child = spawn(process.execPath, [childScript, databasePath, sideFile, runId], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk) => {
      output += String(chunk);
    });
    child.stderr?.on('data', (chunk) => {
      output += String(chunk);
    });
    const exited = once(child, 'exit');
    const deadline = Date.now() + 30_000;
    // Kill it mid-run: after the root and a few branch steps were invoked.
    while ([...invocations(sideFile).values()].reduce((sum, count) => sum + count, 0) < 6) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`child did not progress: ${output}`);
      await pause(5);
    }
    child.kill('SIGKILL');
    const [, signal] = await exited;
    expect(signal).toBe('SIGKILL');
    expect(output).not.toContain('finished');

    const store = createSqliteStore({ path: databasePath });
    try {
      const before = await readAll(store, runId);
      expect(before.some((event) => event.type === 'run-end')).toBe(false);
      const completedBefore = before
        .filter((event) => event.type === 'step-end' && event.result.status === 'succeeded')
        .map((event) => (event.type === 'step-end' ? event.stepId : ''));
      expect(completedBefore).toContain('root');
      expect(completedBefore.length).toBeLessThan(killPlan().steps.length);

      const tools = sideFileTools(sideFile);
      let result: RunResult | undefined;
      const resumeDeadline = Date.now() + 10_000;
      while (!result) {
        try {
          result = await dagEngine({ tools, store }).resume(runId).result;
        } catch (error) {
          // The dead child's lease runs out within its 600 ms TTL.
          if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.LEASE_CONFLICT) throw error;
          if (Date.now() > resumeDeadline) throw error;
          await pause(50);
        }
      }
      expect(result.status).toBe('completed');
      expect(result.steps.every((step) => step.status === 'succeeded')).toBe(true);
      // The join's reference into root's output resolved from the journal, not from a re-run.
      expect(result.steps.find((step) => step.stepId === 'join')?.output).toEqual({
        stepId: 'join',
        value: 'from root',
      });

      const after = invocations(sideFile);
      for (const stepId of completedBefore) expect(after.get(stepId), stepId).toBe(1);
      for (const step of killPlan().steps as { id: string }[]) {
        expect(after.get(step.id), step.id).toBeGreaterThanOrEqual(1);
        // At most once before the kill (in flight) and once after it (re-run, idempotent).
        expect(after.get(step.id), step.id).toBeLessThanOrEqual(2);
      }
      expect((await store.getRun(runId))?.status).toBe('completed');
    } finally {
      await store.close();
    }
  });
});
