import {
  type Engine,
  ErrorCodes,
  MemoryStore,
  newRunId,
  type Plan,
  type PlanValidation,
  planInvalidError,
  type ResumeOptions,
  type RunEvent,
  type RunJournal,
  type RunOptions,
  type RunResult,
  type RunStore,
  readAll,
  reopenRun,
  resultFromFold,
  StepwiseError,
  startRun,
  validatePlan,
} from '@stepwise/core';
import type { DagEngineOptions, DagProgress, DagRunHandle } from './dag-options.js';
import { DagRun } from './dag-run.js';
import { createDagRunHandle } from './dag-run-handle.js';
import { journaledOptions, resolveSettings, settingsFromJournal } from './dag-settings.js';
import { buildDependencyGraph } from './dependency-graph.js';
import { restoreSteps } from './resume-state.js';

/** The dag engine: `Engine` whose handles also report progress. */
export interface DagEngine extends Engine {
  readonly name: 'dag';
  run(plan: Plan, options?: RunOptions): DagRunHandle;
  resume(runId: string, options?: ResumeOptions): DagRunHandle;
}

type Listener = (event: RunEvent) => void;

/**
 * The permissive engine: a step starts the moment its own dependencies succeeded (no waves),
 * bounded by `concurrency` and per-tool limits; `$ref` references resolve from earlier outputs;
 * failures follow `critical`, retries, and the optional recovery hook; everything is journaled
 * and `resume(runId)` continues after a crash.
 *
 * Throws E601 for invalid options. A plan that fails validation does not throw: the handle's
 * `result` rejects with E001/E201/E202 (`details.problems` lists every problem) and nothing is journaled.
 */
export function dagEngine(options: DagEngineOptions): DagEngine {
  const settings = resolveSettings(options);
  let memoryStore: RunStore | undefined;
  const store = (): RunStore => {
    memoryStore ??= new MemoryStore();
    return options.store ?? memoryStore;
  };
  const kernel = {
    registry: options.tools,
    workspace: options.workspace,
    approvals: options.approvals,
    defaultTimeoutMs: options.defaultTimeoutMs,
    log: options.log,
  };
  const session = { owner: options.owner, leaseTtlMs: options.leaseTtlMs, redactor: options.redactor };

  /** Wires a session's journal, cancel requests made before it existed, and the external signal. */
  function launch(
    runId: string,
    total: number,
    signal: AbortSignal | undefined,
    listeners: readonly Listener[],
    open: () => Promise<{ run: DagRun; fresh: boolean; execute: () => Promise<RunResult> } | { finished: RunResult }>,
  ): DagRunHandle {
    let current: DagRun | undefined;
    let finished: DagProgress | undefined;
    let cancelReason: string | undefined;
    const cancel = (reason?: string) => {
      cancelReason ??= reason ?? 'the run was cancelled';
      current?.cancel(cancelReason);
    };
    const onAbort = () =>
      cancel(signal?.reason instanceof Error ? signal.reason.message : String(signal?.reason ?? 'aborted'));
    const opened = open();
    const journal = opened.then((value) => ('run' in value ? value.run.journal : undefined));
    const result = opened.then(async (value) => {
      if (!('run' in value)) {
        finished = { done: value.finished.steps.length, total: value.finished.steps.length, running: 0 };
        return value.finished;
      }
      current = value.run;
      try {
        await deliver(store(), value.run.journal, listeners, value.fresh);
      } catch (error) {
        await value.run.journal.close().catch(() => undefined);
        throw error;
      }
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      if (cancelReason !== undefined) value.run.cancel(cancelReason);
      try {
        return await value.execute();
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    });
    // A host that never awaits `result` must not get an unhandled rejection that ends the process.
    result.catch(() => undefined);
    journal.catch(() => undefined);
    const idle: DagProgress = { done: 0, total, running: 0 };
    return createDagRunHandle({
      runId,
      store: store(),
      journal,
      result,
      cancel,
      progress: () => current?.progress() ?? finished ?? idle,
      stepStatus: (stepId) => current?.stepStatus(stepId),
    });
  }

  return {
    name: 'dag',

    validate(plan: unknown): PlanValidation {
      return validatePlan(plan, { tools: options.tools, engine: 'dag' });
    },

    run(plan: Plan, runOptions: RunOptions = {}): DagRunHandle {
      const runId = runOptions.runId ?? newRunId();
      const startedAt = Date.now();
      const validation = validatePlan(plan, { tools: options.tools, engine: 'dag' });
      const listeners = [options.onEvent, runOptions.onEvent].filter((listener) => listener !== undefined);
      const total = Array.isArray(plan?.steps) ? plan.steps.length : 0;
      return launch(runId, total, runOptions.signal, listeners, async () => {
        if (!validation.ok) throw planInvalidError(validation.problems);
        const journal = await startRun({
          store: store(),
          runId,
          plan: validation.plan,
          engine: 'dag',
          ...session,
          ...(runOptions.authorization ? { authorization: runOptions.authorization } : {}),
          ...(runOptions.parentRunId ? { parentRunId: runOptions.parentRunId } : {}),
          options: journaledOptions(settings),
        });
        const run = new DagRun({
          plan: validation.plan,
          graph: buildDependencyGraph(validation.plan),
          journal,
          kernel,
          settings,
          startedAt,
        });
        return { run, fresh: true, execute: () => run.execute() };
      });
    },

    resume(runId: string, resumeOptions: ResumeOptions = {}): DagRunHandle {
      const listeners = [options.onEvent, resumeOptions.onEvent].filter((listener) => listener !== undefined);
      return launch(runId, 0, resumeOptions.signal, listeners, async () => {
        const reopened = await reopenRun({ store: store(), runId, ...session });
        const { journal, run, plan } = reopened;
        try {
          if (run.status !== 'running') {
            await journal.close();
            return { finished: resultFromFold(run) as RunResult };
          }
          if (run.engine !== 'dag') {
            throw new StepwiseError(
              ErrorCodes.CONFIG_INVALID,
              `run ${runId} was started by the "${run.engine}" engine; resume it with that engine`,
              { location: runId },
            );
          }
          const validation = validatePlan(plan, { engine: 'dag' });
          if (!validation.ok) throw planInvalidError(validation.problems);
          const state = restoreSteps(run, await readAll(store(), runId), options.allowRerunInterrupted ?? false);
          const resumed = new DagRun({
            plan: validation.plan,
            graph: buildDependencyGraph(validation.plan),
            journal,
            kernel,
            settings: settingsFromJournal(run.options, settings),
            startedAt: Date.parse(run.createdAt) || Date.now(),
          });
          const owner = journal.lease?.owner ?? options.owner ?? 'unknown';
          return {
            run: resumed,
            fresh: false,
            execute: async () => {
              try {
                await journal.record({ type: 'run-resume', owner, interrupted: state.interrupted });
              } catch (error) {
                await journal.close().catch(() => undefined);
                throw error;
              }
              return resumed.execute(state.steps);
            },
          };
        } catch (error) {
          await journal.close().catch(() => undefined);
          throw error;
        }
      });
    },
  };
}

/**
 * Subscribes listeners to the journal. A new run's `run-start` was journaled before anyone could
 * subscribe, so it is read back from the store and handed over first; nothing else is journaled
 * in between.
 */
async function deliver(
  store: RunStore,
  journal: RunJournal,
  listeners: readonly Listener[],
  replayStart: boolean,
): Promise<void> {
  if (listeners.length === 0) return;
  const call = (event: RunEvent) => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A listener's bug must not break the run.
      }
    }
  };
  if (replayStart) {
    for await (const event of store.read(journal.runId)) {
      if (event.seq > journal.lastSeq) break;
      call(event);
    }
  }
  journal.subscribe(call);
}
