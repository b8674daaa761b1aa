import { setMaxListeners } from 'node:events';
import { ErrorCodes, type StepError, StepwiseError, toStepError } from '../errors.js';
import type { PlanReviseEvent, RunResult, RunStatus, StepResult } from '../journal/events.js';
import type { FoldedRun } from '../journal/fold-run.js';
import type { RunJournal } from '../journal/journal.js';
import { invokeStep, type KernelContext } from '../kernel/invoke-step.js';
import { backoffDelay, DEFAULT_RETRY, isRetryable, sleep } from '../plan/backoff.js';
import type { PlanRevision } from '../plan/plan-revision.js';
import type { Plan, RetryPolicy } from '../plan/plan-schema.js';
import { findReferences } from '../plan/references.js';
import type { RetainOutputs } from '../run/engine-options.js';
import { finishRun } from '../run/run-session.js';
import { adjustAfterStep } from './adjust-run.js';
import { buildDependencyGraph, type DependencyGraph } from './dependency-graph.js';
import { endUnstarted } from './end-unstarted.js';
import type {
  EnginePolicy,
  RecoveryDecision,
  RevisionRequest,
  RunProgress,
  SchedulerObserver,
  SchedulerStepStatus,
} from './engine-policy.js';
import { nextTurn, TURN_EVERY_MS } from './event-loop-turn.js';
import { insertSteps } from './insert-steps.js';
import { readBackOutput } from './output-retention.js';
import { normalizeDecision } from './policies/recovery-decision.js';
import { ReadyQueue } from './ready-queue.js';
import { restoreSession } from './restore-session.js';
import type { RestoredStep } from './resume-state.js';
import { commitRevision, prepareRevision } from './revise-run.js';
import { type Slot, StepBoard } from './step-board.js';
import { dependencyError, describeOutcome, isWaiting } from './step-outcome.js';

/** A hook may keep asking for retries; past this many attempts the failure policy decides (the schema's own cap). */
const MAX_ATTEMPTS = 100;

export interface RunSchedulerInit {
  readonly plan: Plan;
  readonly graph: DependencyGraph;
  readonly journal: RunJournal;
  readonly kernel: Omit<KernelContext, 'signal' | 'journal' | 'runId'>;
  readonly policy: EnginePolicy;
  /** Epoch ms the run started (the first session's start for a resumed run). */
  readonly startedAt: number;
  readonly observer?: SchedulerObserver;
  /** Default `all` (see `RetainOutputs`). */
  readonly retainOutputs?: RetainOutputs;
}

/** A step waiting for a free slot, with the attempt it will start. */
interface Queued {
  readonly index: number;
  readonly tool: string | undefined;
  readonly toolLimit: number;
  readonly slot: Slot;
  readonly attempt: number;
}

/**
 * The one scheduler: decides which step runs next for every engine. A step may start the moment
 * its dependencies let it; it starts when a slot frees, lowest plan index first (so concurrency 1
 * is array order), under the global and per-tool limits. The engine's policy decides retries, the
 * recovery hook, and whether a failure stops the run. Every state change is journaled through the kernel.
 */
export class RunScheduler {
  readonly board: StepBoard;
  readonly policy: EnginePolicy;
  readonly #journal: RunJournal;
  /** `step` durability: a step waits for its dependencies' ends to be durable (see `#dependenciesDurable`). */
  readonly #gated: boolean;
  readonly #kernel: KernelContext;
  readonly #controller = new AbortController();
  readonly #ready: ReadyQueue<Queued>;
  #pumping = false;
  /** When the run last gave the event loop a turn (see `#turnDue`); unset until its first step. */
  #turnAt: number | undefined;
  readonly #startedAt: number;
  readonly #observer: SchedulerObserver;
  #resumed: FoldedRun | undefined;
  /** Scheduling work not yet settled (queued or running attempts, backoffs, hooks, journal flushes). */
  #pending = 0;
  #stopped: { readonly kind: 'cancelled' | 'failed' | 'waiting'; readonly reason: string } | undefined;
  #fatal: { readonly error: unknown } | undefined;
  #resolveIdle: () => void = () => undefined;
  readonly #idle = new Promise<void>((resolve) => {
    this.#resolveIdle = resolve;
  });
  #ended = false;
  #resolveBegun: () => void = () => undefined;
  /** Resolves once `execute` has put every step where it belongs (released, or restored by a resume). */
  readonly #begun = new Promise<void>((resolve) => {
    this.#resolveBegun = resolve;
  });
  /** Revisions of this session, oldest first; `#digest` is the latest's. */
  readonly #revisions: PlanReviseEvent[] = [];
  #digest: string | undefined;
  /** Exclusive sections (revisions) in progress: no step starts meanwhile. */
  #exclusive = 0;
  #chain: Promise<unknown> = Promise.resolve();
  /** Set when an unapproved revision holds the run: nothing new starts and the run ends `waiting`. */
  #holding: string | undefined;
  /** Steps that ended while a revision was being written: completed once it is adopted. */
  readonly #endedDuringRevision: [Slot, StepResult][] = [];

  constructor(init: RunSchedulerInit) {
    this.#journal = init.journal;
    this.#gated = init.journal.gateDependents();
    // A commit nobody awaits (an idempotent step's end) can fail while other steps run: stop now.
    init.journal.onFailure((error) => this.fail(error));
    this.policy = init.policy;
    this.#startedAt = init.startedAt;
    this.#observer = init.observer ?? {};
    this.#kernel = {
      ...init.kernel,
      runId: init.journal.runId,
      journal: init.journal,
      signal: this.#controller.signal,
    };
    // Every in-flight step listens to the run's signal; hundreds at once are expected, not a leak.
    setMaxListeners(0, this.#controller.signal);
    this.#ready = new ReadyQueue(init.policy.concurrency);
    this.board = new StepBoard(init.plan, init.graph, init.journal, init.retainOutputs);
  }

  /** The digest of the plan the run is on now: the latest revision's, else the one the run was journaled under. */
  get planDigest(): string | undefined {
    return this.#digest ?? this.#journal.planDigest;
  }

  get runId(): string {
    return this.#journal.runId;
  }

  get journal(): RunJournal {
    return this.#journal;
  }

  /** The journal's fold when this session resumed a run. */
  get resumed(): FoldedRun | undefined {
    return this.#resumed;
  }

  get stopped(): boolean {
    return this.#stopped !== undefined;
  }

  get registry(): KernelContext['registry'] {
    return this.#kernel.registry;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  log(level: 'warn' | 'error', message: string, error: unknown): void {
    this.#kernel.log?.(level, message, { error: error instanceof Error ? error.message : String(error) });
  }

  /**
   * A revision asked by the host (the run handle's `revise`). Waits until the session has begun,
   * so the steps a resume restored count as started; rejects (E004) once the run has ended.
   */
  async revise(request: RevisionRequest): Promise<PlanRevision> {
    await this.#begun;
    if (this.#ended || this.#stopped) {
      throw new StepwiseError(
        ErrorCodes.INPUT_INVALID,
        `run ${this.runId} has ${this.#ended ? 'ended' : 'stopped'}: only a running run can be revised`,
        { location: this.runId },
      );
    }
    this.#pending++;
    try {
      return await this.exclusive(async () => {
        if (this.#stopped) {
          throw new StepwiseError(ErrorCodes.INPUT_INVALID, `run ${this.runId} stopped before the revision applied`, {
            location: this.runId,
          });
        }
        return commitRevision(this, prepareRevision(this, request));
      });
    } finally {
      this.#pending--;
      this.#settle();
    }
  }

  /** Runs `work` after every earlier exclusive section; no step starts until it is done. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(async () => {
      this.#exclusive++;
      try {
        return await work();
      } finally {
        this.#exclusive--;
        if (this.#exclusive === 0) {
          for (const [slot, result] of this.#endedDuringRevision.splice(0)) this.complete(slot, result);
        }
        this.#pump();
      }
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /** Moves the session to a journaled revision: new board and graph; fresh steps released, or skipped behind a blocker. */
  adopt(revision: PlanRevision, event: PlanReviseEvent, reopened?: Slot): void {
    const { release, blockers } = this.board.revise(revision.plan, buildDependencyGraph(revision.plan), reopened);
    this.#digest = revision.digest;
    this.#revisions.push(event);
    for (const blocker of blockers) if (this.board.skipDependents(blocker)) this.track(this.#journal.flush());
    for (const slot of release) this.release(slot);
  }

  /** Nothing new starts; in-flight steps finish and the run ends `waiting` (an unapproved revision). */
  hold(reason: string): void {
    this.#holding ??= reason;
  }

  progress(): RunProgress {
    return { done: this.board.done, total: this.board.slots.length, running: this.board.running };
  }

  stepStatus(stepId: string): SchedulerStepStatus | undefined {
    return this.board.byId(stepId)?.status;
  }

  /** Stops the run: nothing new starts, in-flight steps are aborted through their signal and end `cancelled`. */
  cancel(reason = 'the run was cancelled'): void {
    if (this.board.done === this.board.slots.length) return;
    this.stop('cancelled', reason);
  }

  /**
   * Runs the session to its end and journals `run-end`. `restored` (with the fold it came from)
   * carries what a resume found in the journal; without it every step starts from scratch.
   */
  async execute(restored?: ReadonlyMap<string, RestoredStep>, fold?: FoldedRun): Promise<RunResult> {
    this.#pending++;
    try {
      this.#resumed = fold;
      if (restored) restoreSession(this, restored);
      else for (const slot of this.board.slots) this.release(slot);
    } catch (error) {
      this.fail(error);
    }
    this.#resolveBegun();
    this.#pending--;
    this.#settle();
    await this.#idle;
    return this.#finish();
  }

  /** Marks a step blocked, or enqueues it when nothing holds it back. */
  release(slot: Slot): void {
    if (slot.result) return;
    if (slot.remaining === 0) this.enqueue(slot, slot.attempt + 1);
    else slot.status = 'blocked';
  }

  enqueue(slot: Slot, attempt: number): void {
    slot.status = 'ready';
    this.#ready.push({ index: slot.index, ...this.#toolLimit(slot), slot, attempt });
    this.#pump();
  }

  /** Whether this result, once final, ends the run under the policy. */
  stopsRun(slot: Slot, result: StepResult): boolean {
    if (this.policy.stopOn === 'any') return result.status !== 'succeeded';
    return result.status === 'failed' && slot.step.critical !== false;
  }

  stop(kind: 'cancelled' | 'failed' | 'waiting', reason: string): void {
    if (this.#stopped) return;
    this.#stopped = { kind, reason };
    this.#controller.abort(new StepwiseError(ErrorCodes.STEP_CANCELLED, reason));
  }

  /** The journal refused a write: stop everything; the result rejects with this error. */
  fail(error: unknown): void {
    this.#fatal ??= { error };
    this.stop('failed', `the journal failed: ${error instanceof Error ? error.message : String(error)}`);
  }

  track(work: Promise<void>): void {
    this.#pending++;
    work
      .catch((error: unknown) => this.fail(error))
      .finally(() => {
        this.#pending--;
        this.#settle();
      });
  }

  /** Starts ready steps while slots are free. Re-entrant calls (a step ending synchronously) leave it to the outer loop. */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#stopped && this.#exclusive === 0 && this.#holding === undefined) {
        const queued = this.#ready.take();
        if (!queued) break;
        this.track(this.#run(queued));
      }
    } finally {
      this.#pumping = false;
    }
  }

  async #run(queued: Queued): Promise<void> {
    let failed: StepResult | undefined;
    // A revision replaced or removed the step after it was queued: its entry only frees the slot.
    if (!queued.slot.removed) queued.slot.claimed = true;
    try {
      if (!queued.slot.removed) failed = await this.#attempt(queued.slot, queued.attempt);
    } finally {
      this.#ready.release(queued);
      this.#pump();
    }
    if (failed) await this.recover(queued.slot, failed);
  }

  /** The policy's limit for the step's tool, counted under the canonical name (the limit may name an alias). */
  #toolLimit(slot: Slot): { tool: string | undefined; toolLimit: number } {
    const tool = slot.step.tool;
    if (tool === undefined) return { tool: undefined, toolLimit: 0 };
    const limits = this.policy.toolConcurrency;
    const canonical = this.#kernel.registry.get(tool)?.name ?? tool;
    const limit = limits[tool] ?? limits[canonical];
    if (limit === undefined) return { tool: undefined, toolLimit: 0 };
    return { tool: canonical, toolLimit: limit };
  }

  /** One attempt inside the concurrency slot; returns the result when it needs the failure policy. */
  async #attempt(slot: Slot, attempt: number): Promise<StepResult | undefined> {
    if (this.#stopped) return undefined;
    if (this.#turnDue() && !(await this.#takeTurn(slot))) return undefined;
    // Only a held gate costs an await; a free-running host answers synchronously.
    const held = this.#observer.beforeStep?.(slot.step, slot.index);
    if (held) {
      await held;
      if (!this.#mayStillStart(slot)) return undefined;
    }
    if (this.#skipForMissingReference(slot)) return undefined;
    if (this.board.retention.mode === 'referenced') await this.#readBack(slot);
    if (this.#gated && !(await this.#dependenciesDurable(slot))) return undefined;
    slot.status = 'running';
    slot.attempt = attempt;
    this.board.running++;
    this.#notify('onStepStart', slot);
    let result: StepResult;
    try {
      result = await this.#work(slot, attempt);
    } catch (error) {
      // Only a journal the store refuses gets here: nothing more can be recorded.
      this.fail(error);
      return undefined;
    } finally {
      this.board.running--;
    }
    if (result.status === 'succeeded') {
      // The adjust hook decides before dependents are released, so a revision can put steps in front of them.
      if (this.policy.adjust) await adjustAfterStep(this, slot, result);
      // Inside the slot on purpose: dependents are queued before the slot frees, so plan order decides ties.
      this.complete(slot, result);
      return undefined;
    }
    if (this.#isFinal(slot, result)) {
      // Nothing to wait for: the failure policy runs before the slot frees, so no later step
      // slips in ahead of a stop (at concurrency 1, a failed critical step starts nothing after it).
      await this.recover(slot, result);
      return undefined;
    }
    return result;
  }

  /**
   * After a step waited to start (a held gate, a turn of the event loop, its dependencies' commit):
   * a stop, an unapproved revision that held the run, or a revision that replaced the step
   * meanwhile keeps it from starting (a replacement is queued on its own).
   */
  #mayStillStart(slot: Slot): boolean {
    return !(this.#stopped || this.#holding !== undefined || slot.removed);
  }

  /**
   * Whether the run has kept the thread for `TURN_EVERY_MS` and owes the event loop a turn before
   * the next step. Never before its first step, so a host's call right after `run()` still finds
   * the first step started. Synchronous: a step with no turn due costs no await.
   */
  #turnDue(): boolean {
    const now = performance.now();
    if (this.#turnAt === undefined) this.#turnAt = now;
    return now - this.#turnAt >= TURN_EVERY_MS;
  }

  /** Waits for the turn; false when the run stopped or was held meanwhile, or the step was replaced. */
  async #takeTurn(slot: Slot): Promise<boolean> {
    await nextTurn();
    this.#turnAt = performance.now();
    return this.#mayStillStart(slot);
  }

  /**
   * Under `step` durability a step starts only once its dependencies' ends are durable (an
   * idempotent step's end commits with the next group commit, not before its slot frees).
   * False when the journal failed: the run fails.
   */
  async #dependenciesDurable(slot: Slot): Promise<boolean> {
    let needed = 0;
    for (const at of this.board.graph.dependencies[slot.index] ?? []) {
      const endSeq = this.board.slots[at]?.endSeq ?? 0;
      if (endSeq > needed) needed = endSeq;
    }
    if (needed <= this.#journal.durableSeq) return true;
    try {
      await this.#journal.flushThrough(needed);
      return this.#mayStillStart(slot);
    } catch (error) {
      this.fail(error);
      return false;
    }
  }

  /** The result stands as it is: no retry backoff and no recovery hook will be waited for. */
  #isFinal(slot: Slot, result: StepResult): boolean {
    if (result.status !== 'failed' || this.policy.stopOn === 'any') return true;
    if (this.policy.onStepFailed) return false;
    if (this.policy.retry === false || !isRetryable(result.error, this.#retryPolicy(slot))) return true;
    const maxAttempts = slot.step.retry?.maxAttempts ?? this.policy.retry.maxAttempts ?? DEFAULT_RETRY.maxAttempts;
    return result.attempt >= maxAttempts;
  }

  /** The engine's retry settings under the step's own (`false` when the engine never retries). */
  #retryPolicy(slot: Slot): Partial<RetryPolicy> | undefined {
    if (this.policy.retry === false) return undefined;
    return { ...this.policy.retry, ...slot.step.retry };
  }

  #work(slot: Slot, attempt: number): Promise<StepResult> {
    const goalSteps = this.policy.goalSteps;
    if (slot.step.tool === undefined && goalSteps) {
      const resumed = slot.resumeAttempt ? this.#resumed : undefined;
      slot.resumeAttempt = false;
      return goalSteps.execute({
        plan: this.board.plan,
        step: slot.step,
        index: slot.index,
        attempt,
        kernel: this.#kernel,
        outputs: this.board.outputs,
        ...(resumed ? { resumed } : {}),
      });
    }
    return invokeStep(
      slot.step,
      {
        attempt,
        references: this.policy.references,
        outputs: this.board.outputs,
        ...(slot.args ? { args: slot.args } : {}),
      },
      this.#kernel,
    );
  }

  /**
   * Reads back from the store the released outputs the step is about to read (a revision or a
   * recovery hook's args added a reference after the output was released).
   */
  async #readBack(slot: Slot): Promise<void> {
    const board = this.board;
    const reads = slot.args
      ? findReferences(slot.args).map((reference) => reference.stepId)
      : [...(board.graph.references[slot.index] ?? [])];
    if (slot.step.tool === undefined)
      for (const at of board.graph.dependencies[slot.index] ?? []) reads.push(board.graph.ids[at] as string);
    const missing = board.retention.missing(reads, (stepId) => board.byId(stepId)?.result);
    if (missing.length === 0) return;
    // Under batched durability the step's end may not be committed yet.
    await this.#journal.flush();
    for (const stepId of missing) {
      const result = board.byId(stepId)?.result as StepResult;
      board.outputs.set(stepId, await readBackOutput(this.#journal.store, this.runId, result));
    }
  }

  /** A step whose args reference a step that ended without output is skipped (E310) without running. */
  #skipForMissingReference(slot: Slot): boolean {
    if (this.policy.references === 'literal') return false;
    const references = slot.args
      ? findReferences(slot.args).map((reference) => reference.stepId)
      : (this.board.graph.references[slot.index] ?? []);
    const blocker = this.board.referencedWithoutOutput(references);
    if (!blocker) return false;
    const result = this.board.emitEnd(
      slot,
      'skipped',
      dependencyError(
        slot.step.id,
        `step "${slot.step.id}" references the output of "${blocker.step.id}", which ${describeOutcome(blocker.result as StepResult)}`,
        { dependency: blocker.step.id, reference: true },
      ),
    );
    this.track(this.#journal.flush());
    this.complete(slot, result);
    return true;
  }

  /** The failure policy, outside the concurrency slot: retry with backoff, the recovery hook, then stop or not. */
  async recover(slot: Slot, result: StepResult): Promise<void> {
    if (this.#stopped || result.status !== 'failed') {
      await this.conclude(slot, result, `step "${slot.step.id}" ${result.status}`);
      return;
    }
    const error: StepError = result.error ?? toStepError(new Error('the step failed'));
    if (await this.#retryLater(slot, result, error)) return;
    const decision = await this.#askHook(slot, result, error);
    if (this.#stopped) {
      this.complete(slot, result);
      return;
    }
    if (decision) return this.#decide(slot, result, decision);
    const what = this.policy.stopOn === 'any' ? 'step' : 'critical step';
    await this.conclude(slot, result, `${what} "${slot.step.id}" failed`);
  }

  /**
   * A final result: a stop comes first, so a stopping run journals nothing for the step's dependents.
   * A failure goes to the adjust hook first: when it revises the plan, the failure no longer stops the run.
   */
  async conclude(slot: Slot, result: StepResult, reason: string): Promise<void> {
    if (this.policy.adjust && !this.#stopped && result.status === 'failed') {
      if ((await adjustAfterStep(this, slot, result)) === 'revised') {
        this.complete(slot, result);
        return;
      }
    }
    if (!this.#stopped && this.stopsRun(slot, result)) this.stop(isWaiting(result) ? 'waiting' : 'failed', reason);
    this.complete(slot, result);
  }

  /** A retryable error with attempts left: journal `step-retry`, wait the backoff, enqueue again. */
  async #retryLater(slot: Slot, result: StepResult, error: StepError): Promise<boolean> {
    if (this.policy.retry === false || !isRetryable(error, this.#retryPolicy(slot))) return false;
    const policy = { ...DEFAULT_RETRY, ...this.policy.retry, ...slot.step.retry };
    if (result.attempt >= policy.maxAttempts) return false;
    const delayMs = backoffDelay(policy, result.attempt, this.policy.random);
    slot.status = 'retrying';
    await this.#journal.record({
      type: 'step-retry',
      stepId: slot.step.id,
      attempt: result.attempt,
      nextAttempt: result.attempt + 1,
      delayMs,
      error,
    });
    try {
      await sleep(delayMs, this.#controller.signal);
    } catch {
      // Stopped while waiting: the end of the session records the step as cancelled.
    }
    if (!this.#stopped) this.enqueue(slot, result.attempt + 1);
    return true;
  }

  async #askHook(slot: Slot, result: StepResult, error: StepError): Promise<RecoveryDecision | undefined> {
    const hook = this.policy.onStepFailed;
    if (!hook || result.attempt >= MAX_ATTEMPTS) return undefined;
    slot.status = 'recovering';
    try {
      return normalizeDecision(
        await hook(slot.step, error, {
          runId: this.runId,
          attempt: result.attempt,
          recoveries: slot.recoveries,
          args: slot.args ?? slot.step.args ?? {},
          outputs: this.board.outputs,
          signal: this.#controller.signal,
        }),
      );
    } catch (thrown) {
      // A broken hook must not break the run: the default policy applies.
      this.#kernel.log?.('warn', `recovery hook failed for step "${slot.step.id}"`, {
        error: thrown instanceof Error ? thrown.message : String(thrown),
      });
      return undefined;
    }
  }

  async #decide(slot: Slot, result: StepResult, decision: RecoveryDecision): Promise<void> {
    if (decision.action === 'insert') return insertSteps(this, slot, result, decision);
    await this.#journal.record({
      type: 'recovery-decision',
      stepId: slot.step.id,
      attempt: result.attempt,
      decision: decision.action,
      ...(decision.action === 'retry' && decision.args ? { args: decision.args } : {}),
      ...(decision.reason ? { reason: decision.reason } : {}),
    });
    if (decision.action === 'retry') {
      slot.recoveries++;
      if (decision.args) slot.args = decision.args;
      this.enqueue(slot, result.attempt + 1);
    } else if (decision.action === 'skip') {
      await this.skipByDecision(slot, result, decision.reason);
    } else {
      this.stop('failed', `the recovery hook aborted the run at step "${slot.step.id}"`);
      this.complete(slot, result);
    }
  }

  /** The hook (or a person continuing the run) chose `skip`: the step ends `skipped`, keeping its error; its dependents may run. */
  async skipByDecision(
    slot: Slot,
    failed: StepResult,
    reason: string | undefined,
    by: 'hook' | 'person' = 'hook',
  ): Promise<void> {
    const error = failed.error ?? toStepError(new Error('the step failed'));
    const who = by === 'hook' ? 'the recovery hook' : 'a person';
    const event = this.#journal.emit({
      type: 'step-end',
      stepId: slot.step.id,
      result: {
        ...failed,
        status: 'skipped',
        error: {
          ...error,
          message: `skipped by ${who}${reason ? ` (${reason})` : ''}: ${error.message}`,
          details: { ...error.details, recovery: 'skip', ...(by === 'person' ? { skippedBy: 'person' } : {}) },
        },
      },
    });
    await this.#journal.flush();
    this.complete(slot, (event as { result: StepResult }).result);
  }

  /** Records a final result and lets the graph move: dependents are released or skipped. */
  complete(slot: Slot, result: StepResult): void {
    if (slot.result) return;
    slot.endSeq = this.#journal.lastSeq;
    // A revision checked the board before writing plan-revise: a step ending meanwhile must not
    // move the graph (release or skip dependents the revision is replacing) until it is adopted.
    if (this.#exclusive > 0) {
      this.#endedDuringRevision.push([slot, result]);
      return;
    }
    const ready = this.board.settle(slot, result);
    this.#notify('onStepEnd', slot);
    if (this.#stopped) return;
    if (ready) {
      for (const target of ready) this.enqueue(target, target.attempt + 1);
    } else if (this.board.skipDependents(slot)) {
      this.track(this.#journal.flush());
    }
  }

  #notify(kind: 'onStepStart' | 'onStepEnd', slot: Slot): void {
    try {
      if (kind === 'onStepStart') this.#observer.onStepStart?.(slot.step, slot.index);
      else this.#observer.onStepEnd?.(slot.result as StepResult, slot.index);
    } catch (error) {
      this.#kernel.log?.('warn', `${kind} callback threw; the run continues`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  #settle(): void {
    if (this.#pending !== 0) return;
    this.#ended = true;
    this.#resolveIdle();
  }

  async #finish(): Promise<RunResult> {
    if (this.#fatal) {
      await this.#journal.close().catch(() => undefined);
      throw this.#fatal.error;
    }
    if (this.policy.unstarted === 'end' && (this.#stopped || this.#holding === undefined)) {
      const emitted = endUnstarted(this.board, this.#stopped?.reason ?? 'the run stopped');
      if (emitted) await this.#journal.flush();
    }
    const results = this.board.slots
      .map((slot) => slot.result)
      .filter((result): result is StepResult => result !== undefined);
    const durationMs =
      this.policy.duration === 'steps'
        ? results.reduce((total, step) => total + step.durationMs, 0)
        : Math.max(0, Date.now() - this.#startedAt);
    const revisions = [...(this.#resumed?.revisions ?? []), ...this.#revisions];
    return finishRun(this.#journal, {
      plan: this.board.plan,
      engine: this.policy.name,
      status: this.#status(results),
      steps: results,
      durationMs,
      ...(this.#digest ? { planDigest: this.#digest } : {}),
      ...(revisions.length > 0 ? { revisions } : {}),
    });
  }

  #status(results: readonly StepResult[]): RunStatus {
    if (this.#stopped) return this.#stopped.kind;
    if (this.#holding !== undefined) return 'waiting';
    // A step waiting for a person's answer: the run ends `waiting`; respond, then resume.
    if (results.some(isWaiting)) return 'waiting';
    const all = results.length === this.board.slots.length && results.every((result) => result.status === 'succeeded');
    return all ? 'completed' : 'partial';
  }
}
