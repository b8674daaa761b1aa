import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readAll } from '@stepwise/core';
import { afterAll, describe, expect, it } from 'vitest';
import { available, decisionsIn, isPlanEnd, openSqlite, pause, resumeWithHook } from './adjust-resume-support.js';

const here = dirname(fileURLToPath(import.meta.url));
const childScript = join(here, 'fixtures', 'adjust-until-killed.mjs');
// The child imports the packages by name, i.e. their built dist (turbo builds before it tests).
const childReady = available('@stepwise/store-sqlite') && existsSync(join(here, '..', 'dist', 'index.js'));

describe.skipIf(!childReady)('SIGKILL while the adjust hook decides (SQLite file, child process)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-adjust-kill-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  });

  it('the resumed run asks the hook once and carries out the steps it adds', { timeout: 60_000 }, async () => {
    const databasePath = join(directory, 'runs.db');
    const sideFile = join(directory, 'invocations.txt');
    const blockFile = join(directory, 'block');
    writeFileSync(sideFile, '');
    writeFileSync(blockFile, '');
    const runId = 'run_adjust_kill';
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
        throw new Error(`the child's hook was never asked: ${output}`);
      await pause(10);
    }
    child.kill('SIGKILL');
    expect((await exited)[1]).toBe('SIGKILL');
    expect(output).not.toContain('finished');
    rmSync(blockFile);

    const store = await openSqlite(databasePath);
    try {
      const before = await readAll(store, runId);
      // Killed with the planning step's end durable and no decision after it.
      expect(before.some(isPlanEnd)).toBe(true);
      expect(decisionsIn(before)).toEqual([]);
      expect(before.some((event) => event.type === 'run-end')).toBe(false);

      const { result, asked } = await resumeWithHook(store, runId, sideFile);
      expect(asked).toEqual(['plan:succeeded', 'build:succeeded', 'check:succeeded']);
      expect(result.status).toBe('completed');
      expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
        ['plan', 'succeeded'],
        ['build', 'succeeded'],
        ['check', 'succeeded'],
      ]);
      // The planning step ran once, before the kill; the planned steps once each, after the resume.
      expect(readFileSync(sideFile, 'utf8')).toBe('plan 1\nbuild 1\ncheck 1\n');
      const events = await readAll(store, runId);
      expect(decisionsIn(events)).toEqual(['plan:revise', 'build:continue', 'check:continue']);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    } finally {
      await store.close();
    }
  });
});
