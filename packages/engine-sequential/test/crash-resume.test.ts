import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, type Plan, type RunResult, readAll, StepwiseError } from '@stepwise/core';
import { deriveRunId } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { build } from 'tsup';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sequentialEngine } from '../src/index.js';
import { crashTools } from './support/crash-tools.js';
import { removeTempDirectories, sqliteVariant, tempDirectory } from './support/stores.js';
import { approve } from './support/tools.js';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
// Inside the package so the bundle resolves @stepwise/* and zod from node_modules like a host would.
const bundleDirectory = join(packageRoot, 'node_modules', '.cache', 'stepwise-crash-child');
const childScript = join(bundleDirectory, 'crash-child.mjs');

beforeAll(async () => {
  await build({
    config: false,
    entry: { 'crash-child': join(packageRoot, 'test/support/crash-child.ts') },
    outDir: bundleDirectory,
    outExtension: () => ({ js: '.mjs' }),
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    external: ['@stepwise/core', '@stepwise/store-sqlite', 'zod'],
    dts: false,
    sourcemap: false,
    clean: true,
    silent: true,
  });
}, 60_000);
afterAll(removeTempDirectories);

async function waitFor(condition: () => boolean, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (child.exitCode !== null) throw new Error(`the child exited early with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('timed out waiting for the child');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

/** Runs `plan` in a child process until `stalled <stepId>`, then kills it with SIGKILL. */
async function runAndKill(plan: Plan, stallAt: string) {
  const directory = tempDirectory('stepwise-crash-');
  const storePath = join(directory, 'stepwise.db');
  const sideFile = join(directory, 'calls.log');
  const authorization = approve(plan);
  writeFileSync(join(directory, 'plan.json'), JSON.stringify(plan));
  writeFileSync(join(directory, 'authorization.json'), JSON.stringify(authorization));
  const child = spawn(
    process.execPath,
    [childScript, storePath, sideFile, join(directory, 'plan.json'), join(directory, 'authorization.json')],
    { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  try {
    await waitFor(() => lines(sideFile).includes(`stalled ${stallAt}`), child);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${stderr}`);
  }
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  return { storePath, sideFile, authorization, runId: deriveRunId(authorization) };
}

/** Resumes as another owner: the dead child's lease is in the database, so wait for it to expire. */
async function resumeAfterCrash(storePath: string, sideFile: string, runId: string) {
  const store = await sqliteVariant.open(storePath);
  const engine = sequentialEngine({ tools: crashTools(sideFile, { stall: false }), store, owner: 'parent' });
  const deadline = Date.now() + 20_000;
  try {
    while (true) {
      try {
        const result: RunResult = await engine.resume(runId).result;
        return { result, events: await readAll(store, runId) };
      } catch (error) {
        const leased = StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT;
        if (!leased || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await store.close();
  }
}

describe('crash and resume with a real SIGKILL, SQLite file', () => {
  it('does not re-run completed steps and fails the in-flight non-idempotent step as interrupted (E309)', async () => {
    const plan = makePlan(
      [
        { id: 's1', tool: 'write_note', args: { text: 'one' } },
        { id: 's2', tool: 'write_note', args: { text: 'two' } },
        { id: 's3', tool: 'stall_write', args: {} },
        { id: 's4', tool: 'write_note', args: { text: 'four' } },
      ],
      { id: 'crash_non_idempotent' },
    );
    const { storePath, sideFile, runId } = await runAndKill(plan, 's3');
    expect(lines(sideFile)).toEqual(['write_note s1 1', 'write_note s2 1', 'stall_write s3 1', 'stalled s3']);

    const { result, events } = await resumeAfterCrash(storePath, sideFile, runId);
    expect(result.status).toBe('failed');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['s1', 'succeeded'],
      ['s2', 'succeeded'],
      ['s3', 'failed'],
    ]);
    expect(result.steps[2]?.error).toMatchObject({ code: ErrorCodes.STEP_INTERRUPTED, location: 's3' });
    // Nothing ran again and nothing after the interrupted step ran.
    expect(lines(sideFile)).toEqual(['write_note s1 1', 'write_note s2 1', 'stall_write s3 1', 'stalled s3']);
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({
      owner: 'parent',
      interrupted: [{ stepId: 's3', action: 'fail' }],
    });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'failed' });
  }, 60_000);

  it('re-runs the in-flight idempotent step and finishes the plan', async () => {
    const plan = makePlan(
      [
        { id: 's1', tool: 'write_note', args: { text: 'one' } },
        { id: 's2', tool: 'stall_read', args: {} },
        { id: 's3', tool: 'write_note', args: { text: 'three' } },
      ],
      { id: 'crash_idempotent' },
    );
    const { storePath, sideFile, runId, authorization } = await runAndKill(plan, 's2');
    const { result } = await resumeAfterCrash(storePath, sideFile, runId);
    expect(result.status).toBe('completed');
    expect(result.steps.map((step) => [step.stepId, step.attempt])).toEqual([
      ['s1', 1],
      ['s2', 2],
      ['s3', 1],
    ]);
    expect(lines(sideFile)).toEqual([
      'write_note s1 1',
      'stall_read s2 1',
      'stalled s2',
      'stall_read s2 2',
      'write_note s3 1',
    ]);

    // And once finished, running the same approval again replays: no tool is called.
    const store = await sqliteVariant.open(storePath);
    try {
      const engine = sequentialEngine({ tools: crashTools(sideFile, { stall: false }), store });
      const again = await engine.run(plan, { authorization }).result;
      expect(again).toEqual(result);
    } finally {
      await store.close();
    }
    expect(lines(sideFile)).toHaveLength(5);
  }, 60_000);
});
