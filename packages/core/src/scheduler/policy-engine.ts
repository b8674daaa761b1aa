import type { StepResult } from '../journal/events.js';
import type { RunStore } from '../journal/run-store.js';
import { newRunId, type PlanAuthorization } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { planInvalidError } from '../plan/validate-plan.js';
import type { Engine, EngineOptions, ResumeOptions, RunOptions } from '../run/engine-options.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import type { EnginePolicy, ProgressRunHandle, SchedulerObserver } from './engine-policy.js';
import { launchSession } from './launch-session.js';
import { SessionOpener } from './session-opener.js';
import { type CheckedPlan, ValidatedPlans } from './validated-plans.js';

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
  readonly authorize?: (
    plan: Plan,
    options: RunOptions,
    /** The plan's digest when it is known already (a remembered plan, or one the caller checked). */
    digest: string | undefined,
  ) => { readonly runId?: string; readonly planDigest?: string };
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
  /** With `prevalidated`: the plan's digest, when the caller computed it (it is not hashed again). */
  readonly planDigest?: string;
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
  /**
   * The plan's check as `run` makes it (`validate`, and the digest when it is known), remembered
   * for a plan object run again: for a host that checks a plan itself before it runs it with
   * `prevalidated` (the strict executor's `load`).
   */
  check(plan: unknown): CheckedPlan;
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
  const opener = new SessionOpener(setup);
  const { store } = opener;
  const validated = new ValidatedPlans(setup.options.tools instanceof ToolRegistry);
  const validate = (plan: unknown) => opener.validate(plan);
  const check = (input: unknown) => validated.check(input, validate);
  const listenersOf = (extra: RunOptions['onEvent']) =>
    [setup.options.onEvent, extra].filter((listener) => listener !== undefined);
  return {
    name: setup.policy.name,
    store,
    validate,
    check,
    run(input: Plan, runOptions: RunOptions = {}, hooks?: SessionHooks): ProgressRunHandle {
      const checked = hooks?.prevalidated ? undefined : check(input);
      const validation = checked?.validation;
      if (validation && !validation.ok) throw planInvalidError(validation.problems);
      const plan = validation?.plan ?? input;
      const knownDigest = checked ? checked.digest : hooks?.planDigest;
      const authorized = setup.authorize?.(plan, runOptions, knownDigest) ?? {};
      const digest = authorized.planDigest ?? knownDigest;
      const known = authorized.runId ?? runOptions.runId;
      const runId = known ?? newRunId();
      return launchSession({
        runId,
        store,
        total: plan.steps.length,
        signal: runOptions.signal,
        listeners: listenersOf(runOptions.onEvent),
        open: () => opener.open(plan, runId, known !== undefined, runOptions, digest, hooks),
      });
    },
    resume(runId: string, resumeOptions: ResumeOptions = {}, hooks?: SessionHooks): ProgressRunHandle {
      return launchSession({
        runId,
        store,
        total: 0,
        signal: resumeOptions.signal,
        listeners: listenersOf(resumeOptions.onEvent),
        open: () => opener.reopen(runId, hooks, resumeOptions),
      });
    },
  };
}
