import { randomUUID } from 'node:crypto';
import { ErrorCodes, type StepError, StepwiseError } from '../errors.js';
import type {
  PlanReviseEvent,
  RunEndEvent,
  RunEvent,
  RunResult,
  RunStartEvent,
  RunStatus,
  StepResult,
} from '../journal/events.js';
import { addUsage, type FoldedRun, foldRun, type StepState } from '../journal/fold-run.js';
import { type Durability, type EventListener, RunJournal } from '../journal/journal.js';
import type { JournalKey } from '../journal/journal-chain.js';
import { JOURNAL_VERSION } from '../journal/journal-version.js';
import { leaseDeadline } from '../journal/lease-keeper.js';
import { readVerifiedJournal } from '../journal/read-verified-journal.js';
import type { Redactor } from '../journal/redact.js';
import type { CancelRequest, Lease, RunStore } from '../journal/run-store.js';
import { checkLinkable } from '../journal/verify-journal.js';
import type { PlanAuthorization } from '../plan/plan-digest.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { killOrphanedProcesses, type OrphanedProcesses } from '../tools/process-groups.js';

/** An event as it is built here, member by member, before the journal stamps it. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type RunEventInputOf<E extends RunEvent> = Omit<E, 'runId' | 'seq' | 'at' | 'chain'>;

/** Options every engine accepts for its journal. */
export interface SessionOptions {
  readonly store: RunStore;
  /** Who holds the run's lease; default a random id per process and run. */
  readonly owner?: string | undefined;
  /** Lease time-to-live, renewed while the run is alive. Default 30 000 ms. */
  readonly leaseTtlMs?: number | undefined;
  readonly redactor?: Redactor | undefined;
  /** See `Durability`. Default `'step'`. */
  readonly durability?: Durability | undefined;
  /** Keys the runs' hash chains; a reopened run's chain is checked with it (E507 when it does not verify). */
  readonly journalKey?: JournalKey | undefined;
  /** See `EngineOptions.liveOutputToStore`. Default true. */
  readonly liveOutputToStore?: boolean | undefined;
}

export interface StartRunOptions extends SessionOptions {
  readonly runId: string;
  readonly plan: Plan;
  readonly engine: string;
  readonly authorization?: PlanAuthorization | undefined;
  readonly parentRunId?: string | undefined;
  readonly options?: Record<string, unknown> | undefined;
  /** Subscribed before `run-start` is journaled, so it hears every event of the run. */
  readonly listener?: EventListener | undefined;
  /**
   * `planDigest(plan)`, when the caller already computed it (e.g. while verifying an
   * authorization): hashing a 10,000-step plan costs milliseconds. Must be the plan's digest.
   */
  readonly planDigest?: string | undefined;
}

/**
 * Renews a lease that was taken before slow work (reading and checking a long journal, waiting for
 * orphaned processes to die) once a third of its TTL is spent, so that work does not count against
 * the run. A lease another owner took meanwhile fails the renewal (E501): the run is theirs.
 */
async function renewedAfterWork(
  store: RunStore,
  held: { readonly lease: Lease; readonly deadline: number },
): Promise<{ readonly lease: Lease; readonly deadline: number }> {
  if (held.deadline - Date.now() > (held.lease.ttlMs * 2) / 3) return held;
  const sentAt = Date.now();
  const lease = await store.renewLease(held.lease);
  return { lease, deadline: leaseDeadline(lease, sentAt) };
}

/** Takes the run's lease, and until when it is held unrenewed (`leaseDeadline`, on this machine's clock). */
async function lease(options: SessionOptions, runId: string) {
  const owner = options.owner ?? `${process.pid}:${randomUUID()}`;
  const sentAt = Date.now();
  const lease = await options.store.acquireLease(runId, owner, options.leaseTtlMs ?? 30_000);
  if (!lease) {
    throw new StepwiseError(ErrorCodes.LEASE_CONFLICT, `run ${runId} is being executed by another owner`, {
      location: runId,
    });
  }
  return { lease, deadline: leaseDeadline(lease, sentAt) };
}

/** Takes the run's lease and journals `run-start`. */
export async function startRun(options: StartRunOptions): Promise<RunJournal> {
  const held = await lease(options, options.runId);
  const digest = options.planDigest ?? planDigest(options.plan);
  const journal = new RunJournal({
    runId: options.runId,
    store: options.store,
    lease: held.lease,
    leaseDeadline: held.deadline,
    lastSeq: 0,
    planDigest: digest,
    redactor: options.redactor,
    durability: options.durability,
    journalKey: options.journalKey,
    liveOutput: options.liveOutputToStore,
  });
  if (options.listener) journal.subscribe(options.listener);
  // Optional members added one by one, not spread: every run pays for this literal.
  const start: Mutable<RunEventInputOf<RunStartEvent>> = {
    type: 'run-start',
    journalVersion: JOURNAL_VERSION,
    planId: options.plan.id,
    planDigest: digest,
    plan: options.plan,
    engine: options.engine,
  };
  if (options.authorization) start.authorization = options.authorization;
  if (options.parentRunId) start.parentRunId = options.parentRunId;
  if (options.options) start.options = options.options;
  try {
    await journal.record(start);
  } catch (error) {
    await journal.close().catch(() => undefined);
    throw error;
  }
  return journal;
}

export interface ResumedRun {
  readonly journal: RunJournal;
  readonly run: FoldedRun;
  readonly plan: Plan;
  /** The journal as it was read (the fold's input), for engines that need more than the fold keeps. */
  readonly events: readonly RunEvent[];
  /** The process groups crashed calls left that resume killed, and those it left alone (also journaled as `process-kill`). */
  readonly processes: OrphanedProcesses;
}

/**
 * Takes the lease of an existing run, checks its journal against the hash chain (E507 when it was
 * changed outside Stepwise: nothing is run, killed or journaled) and folds it. The caller journals
 * `run-resume`.
 */
export async function reopenRun(options: SessionOptions & { readonly runId: string }): Promise<ResumedRun> {
  const held = await lease(options, options.runId);
  try {
    const { events, verification } = await readVerifiedJournal(options.store, options.runId, options);
    checkLinkable(verification);
    const run = foldRun(events, options.runId);
    if (!run.plan) {
      throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${options.runId} has no journal`, {
        location: options.runId,
      });
    }
    // Under the lease and before anything runs: a command the crashed host started must not run beside the next step.
    const processes = await killOrphanedProcesses([...run.processes.values()].flat());
    const kept = await renewedAfterWork(options.store, held);
    const journal = new RunJournal({
      runId: options.runId,
      store: options.store,
      lease: kept.lease,
      leaseDeadline: kept.deadline,
      lastSeq: run.lastSeq,
      planDigest: run.planDigest,
      lastChain: verification.lastChain,
      redactor: options.redactor,
      durability: options.durability,
      journalKey: options.journalKey,
      liveOutput: options.liveOutputToStore,
    });
    // What was killed and what was left (with why) belongs in the run's record: a group left
    // alone may still be running, and only the journal tells the host.
    if (processes.killed.length > 0 || processes.left.length > 0) {
      await journal
        .record({ type: 'process-kill', killed: processes.killed, left: processes.left })
        .catch(async (error: unknown) => {
          await journal.close().catch(() => undefined);
          throw error;
        });
    }
    return { journal, run, plan: run.plan, events, processes };
  } catch (error) {
    await options.store.releaseLease(held.lease).catch(() => undefined);
    throw error;
  }
}

/** What to do with a step a crash left in flight. */
export type InterruptedAction = 'rerun' | 'fail' | 'finish' | 'reconcile';

/**
 * `finish` when the tool's result is journaled (no need to run it again); `rerun` when the tool
 * never started or is idempotent, or the host allows re-running; `reconcile` when the tool can say
 * whether the call's effect happened (`reconciles`); else `fail` as interrupted.
 */
export function interruptedAction(
  step: StepState,
  allowRerun: boolean,
  reconciles: (tool: string) => boolean = () => false,
): InterruptedAction {
  if (step.toolResult) return 'finish';
  if (!step.toolCalled || step.idempotent === true || allowRerun) return 'rerun';
  return step.tool !== undefined && reconciles(step.tool) ? 'reconcile' : 'fail';
}

export function interruptedError(stepId: string): StepError {
  return {
    code: ErrorCodes.STEP_INTERRUPTED,
    message: `step "${stepId}" was in flight when the run stopped and its tool is not idempotent; it was not run again`,
    retryable: false,
    location: stepId,
  };
}

/** Results of ended steps, in plan order. */
export function stepResults(plan: Plan, run: FoldedRun): StepResult[] {
  return plan.steps
    .map((step) => run.steps.get(step.id)?.result)
    .filter((result): result is StepResult => result !== undefined);
}

/** Journals `run-end`, releases the lease, and returns the RunResult. */
export async function finishRun(
  journal: RunJournal,
  details: {
    readonly plan: Plan;
    readonly engine: string;
    readonly status: RunStatus;
    readonly steps: readonly StepResult[];
    readonly durationMs: number;
    /** The digest journaled at run-start; computed from `plan` when absent (costly for large plans). */
    readonly planDigest?: string | undefined;
    /** Revisions of the plan during the run; `plan` is the latest. */
    readonly revisions?: readonly PlanReviseEvent[] | undefined;
    /** Who cancelled a `cancelled` run through the store; default the request its lease carried. */
    readonly cancel?: CancelRequest;
  },
): Promise<RunResult> {
  const revised = details.revisions && details.revisions.length > 0 ? details.revisions : undefined;
  const usage = details.steps.reduce<StepResult['usage']>((total, step) => addUsage(total, step.usage), undefined);
  // A run cancelled through the store names who asked (a local `handle.cancel` has no one to name).
  const cancel = details.status === 'cancelled' ? (details.cancel ?? journal.cancelRequest) : undefined;
  const end: Mutable<RunEventInputOf<RunEndEvent>> = {
    type: 'run-end',
    status: details.status,
    durationMs: details.durationMs,
  };
  if (usage) end.usage = usage;
  if (revised) end.revision = details.plan.revision ?? revised.length;
  if (cancel) {
    end.by = cancel.by;
    if (cancel.reason !== undefined) end.reason = cancel.reason;
  }
  try {
    await journal.record(end);
  } finally {
    await journal.close();
  }
  const result: Mutable<RunResult> = {
    runId: journal.runId,
    // As journaled: a plan's id is the plan's text, and may hold a secret.
    planId: journal.redactor.redactText(details.plan.id),
    planDigest: details.planDigest ?? journal.planDigest ?? planDigest(details.plan),
    engine: details.engine,
    status: details.status,
    steps: details.steps,
    durationMs: details.durationMs,
  };
  if (usage) result.usage = usage;
  if (revised) {
    result.plan = journal.redactor.redact(details.plan);
    result.revisions = revised;
  }
  return result;
}

/** The RunResult of a run that already ended, from its fold (replays, `show`). */
export function resultFromFold(run: FoldedRun): RunResult | undefined {
  if (!run.plan || run.status === 'running') return undefined;
  const steps = stepResults(run.plan, run);
  return {
    runId: run.runId,
    planId: run.planId,
    planDigest: run.planDigest,
    engine: run.engine,
    status: run.status,
    steps,
    durationMs: run.durationMs ?? 0,
    ...(run.usage ? { usage: run.usage } : {}),
    ...(run.revisions.length > 0 ? { plan: run.plan, revisions: [...run.revisions] } : {}),
  };
}
