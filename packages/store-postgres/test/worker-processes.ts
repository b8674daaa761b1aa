import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { makePlan } from '@stepwise/core/testing';
import pg from 'pg';

const script = fileURLToPath(new URL('./fixtures/worker-process.mjs', import.meta.url));

/** Tables the fixture's tools write: every call, the idempotent ledger, and non-idempotent notifications. */
export async function createSideTables(url: string, side: string): Promise<void> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query(`create schema ${side}`);
    await client.query(`create table ${side}.invocations (run_id text, step_id text, execution_id text, pid int,
      at timestamptz default clock_timestamp())`);
    await client.query(
      `create table ${side}.ledger (run_id text, step_id text, pid int, primary key (run_id, step_id))`,
    );
    await client.query(`create table ${side}.notifications (run_id text, step_id text, pid int)`);
    await client.query(
      `create table ${side}.payments (idempotency_key text primary key, run_id text, step_id text, pid int)`,
    );
  } finally {
    await client.end();
  }
}

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Resolves with the worker's owner name once it is polling. */
  readonly ready: Promise<string>;
  /** `onRunEnd` reports, as they arrive. */
  readonly ends: { runId: string; status: string }[];
  /** Resolves when the process exited. */
  readonly exited: Promise<void>;
  /** The last 4,000 characters the worker wrote to stderr (its reports of failed store calls). */
  stderrTail(): string;
}

export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ends: { runId: string; status: string }[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr = (stderr + String(chunk)).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<string>((resolve, reject) => {
    child.once('exit', (code, signal) =>
      reject(new Error(`worker exited (${code ?? signal}) before ready: ${stderr}`)),
    );
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const message = JSON.parse(line) as { ready?: string; runId?: string; status?: string };
      if (message.ready) resolve(message.ready);
      else ends.push({ runId: message.runId as string, status: message.status as string });
    });
  });
  ready.catch(() => undefined);
  return { child, ready, ends, exited, stderrTail: () => stderr };
}

/** A chain of `count` steps; `tool(index)` picks each step's tool. */
export function chainOf(count: number, tool: (index: number) => string, sleepMs = 0) {
  return makePlan(
    Array.from({ length: count }, (_, index) => ({
      id: `s${index}`,
      tool: tool(index),
      args: { sleepMs },
      ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
    })),
    { id: 'plan_chain', goal: 'append to the side tables' },
  );
}

export async function query<T>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Polls `probe` every 25 ms until it gives a value; throws naming `what` after `timeoutMs`. */
export async function until<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      // Blocked past the deadline, this process runs its timer before it reads what a worker sent
      // meanwhile: one more look once the event loop's I/O phase has run.
      await new Promise((resolve) => setImmediate(resolve));
      const last = await probe();
      if (last !== undefined) return last;
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
