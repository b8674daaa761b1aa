import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { ErrorCodes, type RunEvent, type RunResult, type RunStore, StepwiseError } from '@stepwise/core';
import { dagEngine } from '../src/index.js';
// @ts-expect-error plain ESM fixture shared with the child process, no types
import { planningHook, planningTools } from './fixtures/adjust-until-killed.mjs';

const require = createRequire(import.meta.url);

export function available(specifier: string): boolean {
  try {
    return existsSync(require.resolve(specifier));
  } catch {
    return false;
  }
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function openSqlite(path: string): Promise<RunStore> {
  const { createSqliteStore } = (await import('@stepwise/store-sqlite')) as {
    createSqliteStore: (options: { path: string }) => RunStore;
  };
  return createSqliteStore({ path });
}

export const decisionsIn = (events: readonly RunEvent[]) =>
  events.flatMap((event) => (event.type === 'adjust-decision' ? [`${event.stepId}:${event.decision}`] : []));
export const isPlanEnd = (event: RunEvent) => event.type === 'step-end' && event.stepId === 'plan';

/** Resumes `runId` with a fresh planning hook, retrying while a dead process's lease runs out. */
export async function resumeWithHook(store: RunStore, runId: string, sideFile: string) {
  const asked: string[] = [];
  const engine = dagEngine({ tools: planningTools(sideFile), store, concurrency: 1, adjust: planningHook(asked) });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const result: RunResult = await engine.resume(runId).result;
      return { result, asked };
    } catch (error) {
      if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.LEASE_CONFLICT) throw error;
      if (Date.now() > deadline) throw error;
      await pause(50);
    }
  }
}
