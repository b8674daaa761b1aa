import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunEvent } from '@stepwise/core';
import type { RunEventInput } from '@stepwise/core/engine';
import { afterAll } from 'vitest';

export const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** A temporary directory removed after the file's tests. */
export function temporaryDirectory(prefix: string): string {
  const directory = mkdtempSync(join(tmpdir(), `stepwise-sqlite-${prefix}-`));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

export function fileDigest(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

export const sidecarsExist = (path: string) => existsSync(`${path}-wal`) || existsSync(`${path}-shm`);

/** Stamps inputs as RunJournal does. */
export function stamp(runId: string, firstSeq: number, inputs: readonly RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) => ({ ...input, runId, seq: firstSeq + index, at: new Date().toISOString() }) as RunEvent,
  );
}

/** The `run-start` of a run with an empty plan, stamped at `seq`. */
export const runStart = (runId: string, seq = 1): RunEvent =>
  stamp(runId, seq, [
    {
      type: 'run-start',
      planId: 'plan',
      planDigest: 'digest',
      plan: { id: 'plan', version: 1, steps: [] },
      engine: 'test',
    },
  ])[0] as RunEvent;

/** A child `node` process with its stdout split into lines. */
export interface Child {
  readonly process: ChildProcess;
  readonly lines: string[];
  /** Resolves with the first line matching `test` (rejects if the child exits first). */
  waitFor(test: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

export function spawnNode(
  script: string,
  args: readonly string[],
  options: { uid?: number; gid?: number } = {},
): Child {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid }),
  });
  // A child that already exited closes its stdin: writing to it then is not the test's failure.
  child.stdin.on('error', () => undefined);
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    for (const wake of waiters) wake();
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => {
      done = true;
      for (const wake of waiters) wake();
      resolve({ code, signal, stderr });
    }),
  );
  const waitFor = (test: (line: string) => boolean, timeoutMs = 20_000) =>
    new Promise<string>((resolve, reject) => {
      // Decided after the loop's poll phase, not in the timer: when this process was blocked past the
      // deadline (a synchronous SQLite busy wait of another lane's store), the timer fires before the
      // lines that were already waiting in the pipe are read, and a child that printed in time would
      // be reported silent ("got []").
      const timer = setTimeout(
        () =>
          setImmediate(() => {
            if (!waiters.has(check)) return;
            check();
            if (!waiters.has(check)) return;
            waiters.delete(check);
            reject(new Error(`timed out waiting for a line from ${script}; got ${JSON.stringify(lines)} ${stderr}`));
          }),
        timeoutMs,
      );
      const check = () => {
        const line = lines.find(test);
        if (line !== undefined || done) {
          clearTimeout(timer);
          waiters.delete(check);
          if (line !== undefined) resolve(line);
          else
            reject(
              new Error(`${script} exited before the expected line; stdout ${JSON.stringify(lines)}; stderr ${stderr}`),
            );
        }
      };
      waiters.add(check);
      check();
    });
  return { process: child, lines, waitFor, exited };
}
