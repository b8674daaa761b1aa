import type { Engine, EngineOptions, ResumeOptions, RunOptions } from '../engine.js';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunResult, StepResult } from '../events.js';
import type { FoldedRun } from '../fold-run.js';
import { foldRun } from '../fold-run.js';
import { MemoryStore } from '../memory-store.js';
import { newRunId, type PlanAuthorization, planDigest } from '../plan-digest.js';
import type { Plan } from '../plan-schema.js';
import { reopenRun, resultFromFold, startRun, stepResults } from '../run-session.js';
import { type RunStore, readAll } from '../run-store.js';
import { type PlanValidation, planInvalidError, validatePlan } from '../validate-plan.js';
import { buildDependencyGraph } from './dependency-graph.js';
import type { EnginePolicy, ProgressRunHandle, SchedulerObserver } from './engine-policy.js';
import { launchSession, type OpenedSession } from './launch-session.js';
import { restoreSteps } from './resume-state.js';
import { RunScheduler } from './run-scheduler.js';

/** How an engine is made from a policy; everything else (start, resume, lease, cancel, handle) is shared. */
export interface PolicyEngineSetup {
  readonly policy: EnginePolicy;
  readonly options: EngineOptions;
  /** Journaled with `run-start`, so a resume schedules the same way. */
  readonly journaledOptions?: Readonly<Record<string, unknown>>;
  /** The policy a resume uses, given what `run-start` journaled. Default: the engine's own. */
  readonly policyFromJournal?: (journaled: Readonly<Record<string, unknown>> | undefined) => EnginePolicy;
  /**
   * Checks a valid plan's authorization before anything runs (throws E002/E003) and may fix the
   * run id (the strict engine derives it from the authorization). Default: any plan may run.
   */
  readonly authorize?: (plan: Plan, options: RunOptions) => { readonly runId?: string; readonly planDigest?: string };
  /** Checks a run being resumed (its plan as journaled, its recorded authorization). */
  readonly verifyResume?: (plan: Plan, authorization: PlanAuthorization | undefined) => void;
}

/** Per-run hooks for hosts that drive a run step by step (the strict executor). */
export interface SessionHooks {
  readonly observer?: SchedulerObserver;
  /**
   * The session is open: `started` once `run-start` is journaled, `resumed` once `run-resume` is,
   * `replayed` when the run had already ended and its recorded result stands.
   */
  readonly onOpened?: (opened: SessionOpened) => void;
  /** The caller already validated this very plan object with the engine's tools and rules: skip it. */
  readonly prevalidated?: boolean;
}

/** What a host driving a session learns when it opens. */
export interface SessionOpened {
  readonly kind: 'started' | 'resumed' | 'replayed';
  readonly plan: Plan;
  /** Results journaled before this session (resume, replay), in plan order. */
  readonly ended: readonly StepResult[];
}

/** An engine built on the one scheduler: every run handle reports progress too. */
export interface PolicyEngine extends Engine {
  readonly store: RunStore;
  run(plan: Plan, options?: RunOptions, hooks?: SessionHooks): ProgressRunHandle;
  resume(runId: string, options?: ResumeOptions, hooks?: SessionHooks): ProgressRunHandle;
}

/**
 * Makes an engine from a policy. `run` throws synchronously, before anything is journaled, for
 * input it can judge on its own: an invalid plan (E001, or E201 / E202 when those are the only
 * problems; `details.problems` lists every problem) and a missing or mismatched authorization
 * (E002 / E003). Everything that needs the store (a lease held elsewhere, a journal refused)
 * arrives through the handle's `result`. A run id that already has a journal is not started
 * again: an ended run replays its recorded result, a running one resumes.
 */
export function createPolicyEngine(setup: PolicyEngineSetup): PolicyEngine {
  const { policy, options } = setup;
  const store: RunStore = options.store ?? new MemoryStore();
  const kernel = {
    registry: options.tools,
    ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    ...(options.approvals ? { approvals: options.approvals } : {}),
    ...(options.defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs: options.defaultTimeoutMs }),
    ...(options.log ? { log: options.log } : {}),
  };
  const session = {
    store,
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(options.redactor ? { redactor: options.redactor } : {}),
  };
  const validate = (plan: unknown, tools = true): PlanValidation =>
    validatePlan(plan, {
      ...(tools ? { tools: options.tools } : {}),
      engine: policy.validation,
      goalSteps: policy.goalSteps !== undefined,
    });
  const listenersOf = (extra: RunOptions['onEvent']) =>
    [options.onEvent, extra].filter((listener) => listener !== undefined);
  const scheduler = (
    plan: Plan,
    journal: RunScheduler['journal'],
    runPolicy: EnginePolicy,
    startedAt: number,
    hooks?: SessionHooks,
  ) =>
    new RunScheduler({
      plan,
      graph: buildDependencyGraph(plan),
      journal,
      kernel,
      policy: runPolicy,
      startedAt,
      ...(hooks?.observer ? { observer: hooks.observer } : {}),
    });

  /** Takes the lease of an existing run and continues it from its journal (or replays its end). */
  async function reopen(runId: string, hooks: SessionHooks | undefined): Promise<OpenedSession> {
    const { journal, run, plan, events } = await reopenRun({ ...session, runId });
    try {
      if (run.status !== 'running') {
        await journal.close();
        const finished = resultFromFold(run) as RunResult;
        hooks?.onOpened?.({ kind: 'replayed', plan, ended: finished.steps });
        return { finished, events };
      }
      if (run.engine !== policy.name) {
        throw new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          `run ${runId} was started by the "${run.engine}" engine; resume it with that engine`,
          { location: runId },
        );
      }
      const validation = validate(plan, policy.validation === 'sequential');
      if (!validation.ok) throw planInvalidError(validation.problems);
      setup.verifyResume?.(validation.plan, run.authorization);
      return resumed(validation.plan, run, events, journal, hooks);
    } catch (error) {
      await journal.close().catch(() => undefined);
      throw error;
    }
  }

  function resumed(
    plan: Plan,
    run: FoldedRun,
    events: Parameters<typeof restoreSteps>[1],
    journal: RunScheduler['journal'],
    hooks: SessionHooks | undefined,
  ): OpenedSession {
    const state = restoreSteps(run, events, options.allowRerunInterrupted ?? false);
    const runPolicy = setup.policyFromJournal?.(run.options) ?? policy;
    const live = scheduler(plan, journal, runPolicy, Date.parse(run.createdAt) || Date.now(), hooks);
    const owner = journal.lease?.owner ?? options.owner ?? 'unknown';
    return {
      scheduler: live,
      execute: async () => {
        try {
          await journal.record({ type: 'run-resume', owner, interrupted: state.interrupted });
        } catch (error) {
          await journal.close().catch(() => undefined);
          throw error;
        }
        hooks?.onOpened?.({ kind: 'resumed', plan, ended: stepResults(plan, run) });
        return live.execute(state.steps, run);
      },
    };
  }

  /** Starts a new run, or — when its id already has a journal — replays or resumes that run. */
  async function open(
    plan: Plan,
    runId: string,
    known: boolean,
    runOptions: RunOptions,
    digest: string | undefined,
    hooks?: SessionHooks,
    second = false,
  ): Promise<OpenedSession> {
    const existing = known ? await store.getRun(runId) : undefined;
    if (existing) {
      const expected = digest ?? planDigest(plan);
      if (existing.planDigest !== expected) {
        throw new StepwiseError(
          ErrorCodes.PLAN_MISMATCH,
          `run ${runId} already exists for another plan (digest ${existing.planDigest}); a run id names one plan`,
          { location: '/runId', details: { expected: existing.planDigest, actual: expected } },
        );
      }
      if (existing.status !== 'running') {
        const events = await readAll(store, runId);
        const finished = resultFromFold(foldRun(events, runId)) as RunResult;
        hooks?.onOpened?.({ kind: 'replayed', plan, ended: finished.steps });
        return { finished, events };
      }
      return reopen(runId, hooks);
    }
    const startedAt = Date.now();
    let journal: RunScheduler['journal'];
    try {
      journal = await begin(plan, runId, runOptions, digest);
    } catch (error) {
      // Another process started the same run between our look and our lease: join it as above.
      if (known && !second && StepwiseError.isInstance(error) && error.code === ErrorCodes.JOURNAL_CONFLICT) {
        return open(plan, runId, true, runOptions, digest, hooks, true);
      }
      throw error;
    }
    const live = scheduler(plan, journal, policy, startedAt, hooks);
    hooks?.onOpened?.({ kind: 'started', plan, ended: [] });
    return { scheduler: live, execute: () => live.execute() };
  }

  function begin(plan: Plan, runId: string, runOptions: RunOptions, digest: string | undefined) {
    return startRun({
      ...session,
      runId,
      plan,
      engine: policy.name,
      ...(runOptions.authorization ? { authorization: runOptions.authorization } : {}),
      ...(digest ? { planDigest: digest } : {}),
      ...(runOptions.parentRunId ? { parentRunId: runOptions.parentRunId } : {}),
      ...(setup.journaledOptions ? { options: { ...setup.journaledOptions } } : {}),
    });
  }

  return {
    name: policy.name,
    store,
    validate: (plan: unknown) => validate(plan),
    run(input: Plan, runOptions: RunOptions = {}, hooks?: SessionHooks): ProgressRunHandle {
      const validation = hooks?.prevalidated ? undefined : validate(input);
      if (validation && !validation.ok) throw planInvalidError(validation.problems);
      const plan = validation?.plan ?? input;
      const authorized = setup.authorize?.(plan, runOptions) ?? {};
      const known = authorized.runId ?? runOptions.runId;
      const runId = known ?? newRunId();
      return launchSession({
        runId,
        store,
        total: plan.steps.length,
        signal: runOptions.signal,
        listeners: listenersOf(runOptions.onEvent),
        open: () => open(plan, runId, known !== undefined, runOptions, authorized.planDigest, hooks),
      });
    },
    resume(runId: string, resumeOptions: ResumeOptions = {}, hooks?: SessionHooks): ProgressRunHandle {
      return launchSession({
        runId,
        store,
        total: 0,
        signal: resumeOptions.signal,
        listeners: listenersOf(resumeOptions.onEvent),
        open: () => reopen(runId, hooks),
      });
    },
  };
}
