import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  defineTool,
  type Engine,
  ErrorCodes,
  type RunStore,
  StepwiseError,
  ToolError,
  ToolRegistry,
} from '@stepwise/core';
import { agenticEngine, type ChatModel } from '@stepwise/engine-agentic';
import { dagEngine } from '@stepwise/engine-dag';
import { strictEngine } from '@stepwise/engine-sequential';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { z } from 'zod';
import { type DashboardOptions, type DashboardServer, serveDashboard } from '../src/index.js';

export const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url));

/**
 * The tools of the tests: `sleep_ms` (read), `note_write` (write: the policy pauses for a person),
 * `flaky` (fails while its key is in `failing`, for retry and skip), `wait_for_abort` (runs until
 * cancelled).
 */
export function testTools(failing: Set<string>): ToolRegistry {
  const tools = new ToolRegistry();
  tools.register(
    defineTool({
      name: 'sleep_ms',
      description: 'Sleeps',
      input: z.object({ ms: z.number(), label: z.string().optional() }),
      effect: 'read',
      async execute({ ms }, context) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          context.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return { slept: ms };
      },
    }),
  );
  tools.register(
    defineTool({
      name: 'note_write',
      description: 'Writes a note (asks a person first)',
      input: z.object({ text: z.string() }),
      effect: 'write',
      async execute({ text }) {
        return { written: text };
      },
    }),
  );
  tools.register(
    defineTool({
      name: 'flaky',
      description: 'Fails while its key is marked failing',
      input: z.object({ key: z.string() }),
      effect: 'read',
      async execute({ key }) {
        if (failing.has(key)) throw new ToolError({ code: 'E300', message: `${key} is broken`, retryable: false });
        return { ok: key };
      },
    }),
  );
  tools.register(
    defineTool({
      name: 'wait_for_abort',
      description: 'Runs until cancelled',
      input: z.object({}),
      effect: 'read',
      async execute(_input, context) {
        await new Promise<void>((resolve) => context.signal.addEventListener('abort', () => resolve()));
        throw new ToolError({ code: 'E307', message: 'cancelled', retryable: false });
      },
    }),
  );
  return tools;
}

export interface Harness {
  readonly directory: string;
  readonly database: string;
  readonly store: RunStore;
  /** The dag engine; `engines` has the strict one too, and the agentic one when given a model. */
  readonly engine: Engine;
  readonly engines: Readonly<Record<string, Engine>>;
  readonly failing: Set<string>;
  readonly server: DashboardServer;
  close(): Promise<void>;
}

/**
 * A SQLite store in a temporary folder (or the given store), the engines over it with writes
 * pausing for a person, and the dashboard serving them on 127.0.0.1, resuming each run in this
 * process with the engine that started it (as a host with several engines would).
 */
export async function startHarness(
  options: Partial<DashboardOptions> & {
    readonly openStore?: (directory: string) => Promise<RunStore>;
    readonly model?: ChatModel;
  } = {},
): Promise<Harness> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-dashboard-'));
  const database = path.join(directory, 'stepwise.db');
  const { openStore, model, ...dashboardOptions } = options;
  const store = openStore ? await openStore(directory) : createSqliteStore({ path: database });
  const failing = new Set<string>();
  const tools = testTools(failing);
  const approvals = { policy: { effects: { write: 'pause' as const } } };
  const engine = dagEngine({ tools, store, approvals });
  const engines: Record<string, Engine> = { dag: engine, sequential: strictEngine({ tools, store, approvals }) };
  if (model) engines.agentic = agenticEngine({ tools, store, approvals, model, onBlocked: 'ask' });
  const server = await serveDashboard({
    store,
    async resume(runId, resumeOptions) {
      const name = (await store.getRun(runId))?.engine ?? '';
      const chosen = engines[name];
      if (!chosen) throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `no ${name} engine here`, { location: runId });
      return chosen.resume(runId, resumeOptions);
    },
    actor: () => 'alice',
    pollIntervalMs: 100,
    ...dashboardOptions,
  });
  return {
    directory,
    database,
    store,
    engine,
    engines,
    failing,
    server,
    async close() {
      await server.close();
      await store.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Waits until `check` returns something other than undefined/false, polling; fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`eventually: still not true after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
