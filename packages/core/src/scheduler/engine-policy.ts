import type { StepError } from '../errors.js';
import type { StepResult, StepStatus } from '../journal/events.js';
import type { FoldedRun } from '../journal/fold-run.js';
import type { KernelContext } from '../kernel/invoke-step.js';
import type { PlanAuthorization } from '../plan/plan-digest.js';
import type { PlanEdit, PlanRevision } from '../plan/plan-revision.js';
import type { Plan, RetryPolicy, Step } from '../plan/plan-schema.js';
import type { EngineKind } from '../plan/validate-plan.js';
import type { RunHandle } from '../run/run-handle.js';
import type { AdjustHook } from './policies/adjust-hook.js';

/** What a recovery hook may answer for a failed step. */
export type RecoveryDecision =
  /** Run the step again now (a new attempt, new executionId), optionally with new args (references allowed). */
  | { readonly action: 'retry'; readonly args?: Record<string, unknown>; readonly reason?: string }
  /** Give the step up but let its dependents run; dependents that reference its output are skipped (E310). */
  | { readonly action: 'skip'; readonly reason?: string }
  /** Fail the whole run, as if the step were critical. */
  | { readonly action: 'abort'; readonly reason?: string }
  /**
   * Insert steps before the failed one (a plan revision), then `retry` it once they succeeded (its
   * `dependsOn` gains them; the default) or `skip` it. Refused inserts (invalid plan, an id taken)
   * are journaled and the default failure policy applies.
   */
  | {
      readonly action: 'insert';
      readonly steps: readonly Step[];
      readonly afterwards?: 'retry' | 'skip';
      readonly reason?: string;
    };

/** What a recovery hook learns about the failure besides the step and its error. */
export interface RecoveryContext {
  readonly runId: string;
  /** The attempt that failed (1-based). */
  readonly attempt: number;
  /** How many times a hook already answered `retry` for this step in this session. */
  readonly recoveries: number;
  /** The args the failed attempt used (before reference resolution). */
  readonly args: Record<string, unknown>;
  /** Outputs of the steps that succeeded so far (redacted, as journaled). */
  readonly outputs: ReadonlyMap<string, unknown>;
  /** Aborted when the run is cancelled or fails; a slow hook should honour it. */
  readonly signal: AbortSignal;
}

/**
 * Asked once the retry policy has given up on a failed step (non-retryable error, attempts used up,
 * or a step interrupted by a crash). Return `undefined` to apply the default failure policy.
 */
export type RecoveryHook = (
  step: Step,
  error: StepError,
  context: RecoveryContext,
) => Promise<RecoveryDecision | undefined> | RecoveryDecision | undefined;

/** One attempt of a goal step (a step without `tool`), as the scheduler hands it over. */
export interface GoalStepRequest {
  readonly plan: Plan;
  readonly step: Step;
  /** The step's index in the plan. */
  readonly index: number;
  readonly attempt: number;
  /** The run's kernel context; its signal aborts when the run is cancelled or fails. */
  readonly kernel: KernelContext;
  /** Outputs of the steps that succeeded so far. */
  readonly outputs: ReadonlyMap<string, unknown>;
  /**
   * Present when a crash left this attempt in flight, or the attempt ended `waiting` on a question
   * to a person and the run continued: the journal as folded at resume. The executor continues the
   * attempt from it instead of starting over (after a crash its `step-start` is already journaled;
   * after a question the step's status is not `running`, and the scheduler journals `step-start` again).
   */
  readonly resumed?: FoldedRun;
}

/**
 * Carries out goal steps: the scheduler journals the attempt's `step-start` (unless a crash left it
 * in flight); the executor does the work through the kernel, ends the step with the kernel's
 * `endStep` (which journals `step-end`) and returns its result. `@stepwise/engine-agentic`'s
 * `goalStepExecutor({ model })` is the model loop; any engine whose policy admits goal steps takes one.
 */
export interface GoalStepExecutor {
  execute(request: GoalStepRequest): Promise<StepResult>;
  /** Journaled with `run-start` so a resume runs under the same settings. */
  readonly journaled?: Readonly<Record<string, unknown>>;
  /** The executor a resume uses, given what `run-start` journaled (default: this one). */
  fromJournal?(journaled: Readonly<Record<string, unknown>> | undefined): GoalStepExecutor;
}

/**
 * An engine is this policy over the one scheduler and run lifecycle: which steps it admits, how
 * many run at once, what a failure does, and how a run is authorized.
 */
export interface EnginePolicy {
  /** Journaled as the run's engine; a run resumes only under the engine that started it. */
  readonly name: string;
  /** The plan rules `validatePlan` applies. */
  readonly validation: EngineKind;
  /** `resolve` replaces `$ref` / `"$id"` with earlier outputs; `literal` passes args exactly as written. */
  readonly references: 'resolve' | 'literal';
  /** `any`: the first step that does not succeed stops the run. `critical`: only critical failures do. */
  readonly stopOn: 'any' | 'critical';
  /**
   * Under `stopOn: 'critical'`, whether a step that does not set `critical` is critical. Default true;
   * the code agent's policy says false, so independent steps go on after one fails.
   */
  readonly critical?: boolean;
  /** When the run stops: `end` journals the steps that never ran as cancelled or skipped; `leave` leaves them out. */
  readonly unstarted: 'end' | 'leave';
  /** `wall`: the run's duration is wall-clock time; `steps`: the sum of its steps' durations. */
  readonly duration: 'wall' | 'steps';
  readonly concurrency: number;
  /** Per-tool limits, by name or alias. */
  readonly toolConcurrency: Readonly<Record<string, number>>;
  /** Retry policy for steps that set none; `false`: no step is ever retried. */
  readonly retry: Partial<RetryPolicy> | false;
  readonly random: () => number;
  readonly onStepFailed: RecoveryHook | undefined;
  /** Admits goal steps when present. */
  readonly goalSteps: GoalStepExecutor | undefined;
  /** Asked after each step ends; may revise the pending part of the plan or stop the run. Default: none. */
  readonly adjust?: AdjustHook;
  /**
   * A revision made without an approval of its digest: `wait` journals it and ends the run
   * `waiting` once in-flight steps are done (resume with a new authorization), `fail` journals it
   * and fails the run. Absent: revisions need no approval (the permissive engines).
   */
  readonly revisionApproval?: 'wait' | 'fail';
}

/** A revision asked of a running run: edits, or the steps that replace every pending one. */
export interface RevisionRequest {
  readonly edits?: readonly PlanEdit[];
  /** Regenerate the rest: every step that has not started is replaced by these. */
  readonly remaining?: readonly Step[];
  /** Journaled: who revised (a person, `adjust`, `recovery`…). Default `host`. */
  readonly by?: string;
  readonly reason?: string;
  /** The approval of the revised plan's digest (`approvePlan(revised, …)`), for engines that require one. */
  readonly authorization?: PlanAuthorization;
}

/**
 * Where a step is in this session. Final outcomes use the core result statuses:
 * `succeeded | failed | skipped | denied | cancelled`.
 */
export type SchedulerStepStatus =
  /** The session has not scheduled anything yet. */
  | 'pending'
  /** Waits for dependencies. */
  | 'blocked'
  /** Dependencies done; waits for a concurrency slot. */
  | 'ready'
  | 'running'
  /** Failed with a retryable error; waits out its backoff. */
  | 'retrying'
  /** Failed; the recovery hook is deciding. */
  | 'recovering'
  | StepStatus;

/** An overall summary, cheap enough to poll. */
export interface RunProgress {
  /** Steps with a final status. */
  readonly done: number;
  readonly total: number;
  /** Steps whose work is in flight. */
  readonly running: number;
}

/** The run handle every engine returns: events, result, cancel, plus live progress. */
export interface ProgressRunHandle extends RunHandle {
  progress(): RunProgress;
  /**
   * Revises the plan while the run runs: started steps stay as they are (E005 when an edit touches
   * one), the revision is validated like any plan (E001), journaled as `plan-revise` with its diff,
   * and the run carries on with it. Nothing is journaled when it is refused. Rejects with E004 once
   * the run has ended.
   */
  revise(request: RevisionRequest): Promise<PlanRevision>;
  /** The live status of one step, or `undefined` for an unknown id (or before a resume has read the journal). */
  stepStatus(stepId: string): SchedulerStepStatus | undefined;
}

/** Called in the scheduler as steps start and end (after `step-end` is durable); a throw is logged and ignored. */
export interface SchedulerObserver {
  onStepStart?(step: Step, index: number): void;
  onStepEnd?(result: StepResult, index: number): void;
  /**
   * Awaited before each step starts, inside its concurrency slot: a host stepping through a plan
   * (the strict executor's `executeStep`) holds the run here between steps.
   */
  beforeStep?(step: Step, index: number): Promise<void> | undefined;
}
