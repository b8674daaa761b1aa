import {
  type Engine,
  MemoryStore,
  type Plan,
  type PlanValidation,
  type ResumeOptions,
  type RunOptions,
  type RunStore,
} from '@stepwise/core';
import {
  createSharedExecutor,
  ENGINE_NAME,
  type SequentialExecutor,
  type SequentialRunHandle,
} from './sequential-executor.js';
import type { SequentialEngineOptions } from './sequential-options.js';
import { strictEngine } from './strict-engine.js';

/** The strict engine. `store` is the one it journals to (a new MemoryStore when none was given). */
export interface SequentialEngine extends Engine {
  readonly name: 'sequential';
  readonly store: RunStore;
  run(plan: Plan, options?: RunOptions): SequentialRunHandle;
  resume(runId: string, options?: ResumeOptions): SequentialRunHandle;
  /** A new executor over this engine's options and store, for hosts that step through a plan. */
  createExecutor(options?: Pick<RunOptions, 'signal' | 'onEvent'>): SequentialExecutor;
}

/**
 * The strict engine: runs an approved plan exactly as written, one step at a time in array
 * order, and stops at the first step that does not succeed.
 *
 * `run` throws synchronously, before anything is journaled, for an invalid plan (E001, or E201 /
 * E202 when those are the only problems), a missing authorization (E002) and an authorization
 * for another plan or digest (E003). Everything later arrives through the handle's `result`.
 */
export function sequentialEngine(options: SequentialEngineOptions): SequentialEngine {
  const store = options.store ?? new MemoryStore();
  // One policy engine, and so one memory of valid plans, for every run, not one per run.
  const strict = strictEngine({ ...options, store });
  const createExecutor = (perRun: Pick<RunOptions, 'signal' | 'onEvent'> = {}) =>
    createSharedExecutor(
      {
        ...options,
        store,
        ...(perRun.signal ? { signal: perRun.signal } : {}),
        ...(perRun.onEvent ? { onRunEvent: perRun.onEvent } : {}),
      },
      strict,
    );
  return {
    name: ENGINE_NAME,
    store,
    createExecutor,
    validate(plan: unknown): PlanValidation {
      return strict.validate(plan);
    },
    run(plan, runOptions = {}): SequentialRunHandle {
      const executor = createExecutor(runOptions);
      executor.load(plan, runOptions.authorization, runOptions.runId === undefined ? {} : { runId: runOptions.runId });
      const handle = executor.handle();
      executor.execute().catch(() => undefined);
      return handle;
    },
    resume(runId: string, resumeOptions: ResumeOptions = {}): SequentialRunHandle {
      const executor = createExecutor(resumeOptions);
      const loading = executor.loadRun(
        runId,
        resumeOptions.authorization ? { authorization: resumeOptions.authorization } : {},
      );
      const handle = executor.handle();
      loading.then(() => executor.execute()).catch(() => undefined);
      return handle;
    },
  };
}
