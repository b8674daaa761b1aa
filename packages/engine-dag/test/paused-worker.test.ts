import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, type RunStore, readAll } from '@stepwise/core';
import { afterAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const childScript = join(here, 'fixtures', 'paused-worker.mjs');
const require = createRequire(import.meta.url);
const TTL = 1_000;

function available(specifier: string): boolean {
  try {
    return existsSync(require.resolve(specifier));
  } catch {
    return false;
  }
}

// The children import the packages by name, i.e. their built dist (turbo builds before it tests).
const ready = available('@stepwise/store-sqlite') && existsSync(join(here, '..', 'dist', 'index.js'));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Child {
  readonly process: ChildProcess;
  /** Resolves with the child's one line of JSON (its result or its error) once it exited. */
  readonly outcome: Promise<{ status?: string; code?: string; message?: string }>;
}

function start(args: string[]): Child {
  const child = spawn(process.execPath, [childScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  const outcome = once(child, 'exit').then(() => {
    const last = output.trim().split('\n').at(-1) ?? '';
    try {
      return JSON.parse(last) as { status?: string; code?: string; message?: string };
    } catch {
      throw new Error(`child printed no result: ${output}`);
    }
  });
  return { process: child, outcome };
}

const linesOf = (sideFile: string) => readFileSync(sideFile, 'utf8').split('\n').filter(Boolean);

describe.skipIf(!ready)('a worker paused past its lease (SQLite file, two processes)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-paused-'));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    rmSync(directory, { recursive: true, force: true });
  });

  it('starts no tool call after waking once another process took its run over', { timeout: 60_000 }, async () => {
    const databasePath = join(directory, 'runs.db');
    const sideFile = join(directory, 'side.txt');
    writeFileSync(sideFile, '');
    const runId = 'run_paused';
    const first = start([databasePath, sideFile, runId, 'first', 'run', '60000', String(TTL)]);
    children.push(first.process);
    const deadline = Date.now() + 30_000;
    while (!linesOf(sideFile).includes('start hold first')) {
      if (Date.now() > deadline || first.process.exitCode !== null) throw new Error('the first process never started');
      await pause(10);
    }
    // Its tool-call commits with the next group commit, just after the tool starts: a process stopped
    // inside that SQLite transaction would hold the file's write lock, and nobody could take over.
    // Stopped once it is durable (the lease renewals' transactions are microseconds long).
    const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as {
      createSqliteStore: (options: { path: string }) => RunStore;
    };
    const watcher = createSqliteStore({ path: databasePath });
    while (!(await readAll(watcher, runId)).some((event) => event.type === 'tool-call')) {
      if (Date.now() > deadline) throw new Error('the first tool call was never journaled');
      await pause(10);
    }
    await watcher.close();
    // Paused mid-tool, as a stopped or swapped-out process is; its lease runs out meanwhile.
    first.process.kill('SIGSTOP');
    await pause(TTL + 500);
    const second = start([databasePath, sideFile, runId, 'second', 'resume', '0', String(TTL)]);
    children.push(second.process);
    expect(await second.outcome).toEqual({ status: 'completed' });
    const beforeWaking = linesOf(sideFile).length;

    first.process.kill('SIGCONT');
    const woke = await first.outcome;
    expect(woke.code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(woke.message).toContain(runId);
    // Nothing the first process did after waking: no effect of the tool it was in, no next step.
    expect(linesOf(sideFile).length).toBe(beforeWaking);
    expect(linesOf(sideFile).filter((line) => line.endsWith(' first'))).toEqual(['start hold first']);
    expect(linesOf(sideFile).filter((line) => line.endsWith(' second'))).toEqual([
      'start hold second',
      'effect hold second',
      'start m1 second',
      'effect m1 second',
      'start m2 second',
      'effect m2 second',
    ]);

    const store = createSqliteStore({ path: databasePath });
    try {
      const events = await readAll(store, runId);
      expect(events.at(-1)?.type).toBe('run-end');
      expect((await store.getRun(runId))?.status).toBe('completed');
    } finally {
      await store.close();
    }
  });
});
