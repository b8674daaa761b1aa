import { setMaxListeners } from 'node:events';
import {
  backoffDelay,
  DEFAULT_RETRY,
  deriveExecutionId,
  ErrorCodes,
  endStep,
  findReferences,
  finishRun,
  interruptedError,
  invokeStep,
  type KernelContext,
  type Plan,
  type RetryPolicy,
  type RunJournal,
  type RunResult,
  type RunStatus,
  type StepError,
  type StepResult,
  StepwiseError,
  sleep,
  toStepError,
} from '@stepwise/core';
import PQueue from 'p-queue';
import type { DagProgress, DagStepStatus, RecoveryDecision, RecoveryHook } from './dag-options.js';
import type { DependencyGraph } from './dependency-graph.js';
import { normalizeDecision } from './recovery-decision.js';
import type { RestoredStep } from './resume-state.js';
import {
  blocksDependents,
  cancelledError,
  dependencyError,
  describeOutcome,
  letsDependentsRun,
} from './step-outcome.js';

/** Engine options after defaults, as one session uses them. */
export interface DagSettings {
  readonly concurrency: number;
  readonly toolConcurrency: Readonly<Record<string, number>>;
  readonly retry: Partial<RetryPolicy>;
  readonly random: () => number;
  readonly onStepFailed: RecoveryHook | undefined;
}

/** A hook may keep asking for retries; past this many attempts the failure policy decides (the schema's own cap). */
const MAX_ATTEMPTS = 100;

interface Slot {
  readonly index: number;
  readonly step: Plan['steps'][number];
  readonly toolQueue: PQueue | undefined;
  /** Dependencies that have not let this step run yet. */
  remaining: number;
  status: DagStepStatus;
  /** The last attempt started (0: never). */
  attempt: number;
  /** Args a recovery hook substituted; `undefined` uses the step's own. */
  args: Record<string, unknown> | undefined;
  result: StepResult | undefined;
  recoveries: number;
}

export interface DagRunInit {
  readonly plan: Plan;
  readonly graph: DependencyGraph;
  readonly journal: RunJournal;
  readonly kernel: Omit<KernelContext, 'signal' | 'journal' | 'runId'>;
  readonly settings: DagSettings;
  /** Epoch ms the run started (the first session's start for a resumed run). */
  readonly startedAt: number;
}

/**
 * One session of one run: schedules steps the moment their dependencies let them, through a
 * global p-queue (priority = plan order) and optional per-tool queues, and applies the failure
 * policy. Every tool call goes through the core kernel; every state change is journaled.
 */
export class DagRun {
  readonly #plan: Plan;
  readonly #graph: DependencyGraph;
  readonly #journal: RunJournal;
  readonly #settings: DagSettings;
  readonly #kernel: KernelContext;
  readonly #slots: Slot[];
  readonly #outputs = new Map<string, unknown>();
  readonly #controller = new AbortController();
  readonly #global: PQueue;
  readonly #startedAt: number;
  #done = 0;
  #running = 0;
  /** Scheduling work not yet settled (queued or running attempts, backoffs, hooks, journal flushes). */
  #pending = 0;
  #stopped: { readonly kind: 'cancelled' | 'failed'; readonly reason: string } | undefined;
  #fatal: { readonly error: unknown } | undefined;
  #resolveIdle: () => void = () => undefined;
  readonly #idle = new Promise<void>((resolve) => {
    this.#resolveIdle = resolve;
  });

  constructor(init: DagRunInit) {
    this.#plan = init.plan;
    this.#graph = init.graph;
    this.#journal = init.journal;
    this.#settings = init.settings;
    this.#startedAt = init.startedAt;
    this.#kernel = {
      ...init.kernel,
      runId: init.journal.runId,
      journal: init.journal,
      signal: this.#controller.signal,
    };
    // Every in-flight step listens to the run's signal; hundreds at once are expected, not a leak.
    setMaxListeners(0, this.#controller.signal);
    this.#global = new PQueue({ concurrency: init.settings.concurrency });
    const toolQueues = new Map<string, PQueue>();
    this.#slots = init.plan.steps.map((step, index) => ({
      index,
      step,
      toolQueue: this.#toolQueueFor(step.tool, toolQueues),
      remaining: init.graph.dependencies[index]?.length ?? 0,
      status: 'pending',
      attempt: 0,
      args: undefined,
      result: undefined,
      recoveries: 0,
    }));
  }

  get runId(): string {
    return this.#journal.runId;
  }

  get journal(): RunJournal {
    return this.#journal;
  }

  progress(): DagProgress {
    return { done: this.#done, total: this.#slots.length, running: this.#running };
  }

  stepStatus(stepId: string): DagStepStatus | undefined {
    const index = this.#graph.indexById.get(stepId);
    return index === undefined ? undefined : this.#slots[index]?.status;
  }

  /** Stops the run: nothing new starts, in-flight steps are aborted through their signal and end `cancelled`. */
  cancel(reason = 'the run was cancelled'): void {
    if (this.#done === this.#slots.length) return;
    this.#stop('cancelled', reason);
  }

  /**
   * Runs the session to its end and journals `run-end`. `restored` carries what a resume found in
   * the journal; without it every step starts from scratch.
   */
  async execute(restored?: ReadonlyMap<string, RestoredStep>): Promise<RunResult> {
    this.#pending++;
    try {
      if (restored) this.#restore(restored);
      else for (const slot of this.#slots) this.#release(slot);
    } catch (error) {
      this.#fail(error);
    }
    this.#pending--;
    this.#settle();
    await this.#idle;
    return this.#finish();
  }

  #toolQueueFor(tool: string | undefined, queues: Map<string, PQueue>): PQueue | undefined {
    if (tool === undefined) return undefined;
    const canonical = this.#kernel.registry.get(tool)?.name ?? tool;
    const limit = this.#settings.toolConcurrency[tool] ?? this.#settings.toolConcurrency[canonical];
    if (limit === undefined) return undefined;
    let queue = queues.get(canonical);
    if (!queue) {
      queue = new PQueue({ concurrency: limit });
      queues.set(canonical, queue);
    }
    return queue;
  }

  /** Marks a step blocked, or enqueues it when nothing holds it back. */
  #release(slot: Slot): void {
    if (slot.result) return;
    if (slot.remaining === 0) this.#enqueue(slot, slot.attempt + 1);
    else slot.status = 'blocked';
  }

  #restore(restored: ReadonlyMap<string, RestoredStep>): void {
    const actions: [Slot, RestoredStep][] = [];
    for (const slot of this.#slots) {
      const state = restored.get(slot.step.id);
      if (!state) continue;
      slot.attempt = state.attempt;
      slot.args = state.args;
      if (state.result) {
        slot.result = state.result;
        slot.status = state.result.status;
        this.#done++;
        if (state.result.status === 'succeeded') this.#outputs.set(slot.step.id, state.result.output);
      } else if (state.action) {
        actions.push([slot, state]);
      }
    }
    for (const slot of this.#slots) {
      if (!slot.result) continue;
      if (letsDependentsRun(slot.result)) {
        for (const dependent of this.#graph.dependents[slot.index] ?? []) {
          const target = this.#slots[dependent] as Slot;
          target.remaining--;
        }
      }
    }
    // A stop the previous session had begun (a cancel, a critical failure, an abort) carries on.
    for (const slot of this.#slots) {
      const state = restored.get(slot.step.id);
      if (!slot.result || !state) continue;
      if (state.aborted || (slot.result.status === 'failed' && slot.step.critical !== false)) {
        this.#stop('failed', `step "${slot.step.id}" failed before the resume`);
      } else if (slot.result.status === 'cancelled') {
        this.#stop('cancelled', 'the run was being cancelled when it stopped');
      }
    }
    if (this.#stopped) return;
    for (const slot of this.#slots) if (slot.result && !letsDependentsRun(slot.result)) this.#skipDependents(slot);
    for (const [slot, state] of actions) {
      if (slot.result) continue;
      switch (state.action) {
        case 'rerun':
        case 'retry':
          this.#enqueue(slot, state.attempt + 1);
          break;
        case 'finish':
        case 'fail':
          this.#track(this.#endInterrupted(slot, state));
          break;
        case 'skip':
          slot.status = 'recovering';
          this.#track(this.#skipByDecision(slot, state.failure as StepResult, state.reason));
          break;
        default:
          break;
      }
    }
    for (const slot of this.#slots) if (slot.status === 'pending') this.#release(slot);
  }

  /** Journals the end of a step a crash left in flight: its recorded tool result, or E309. */
  async #endInterrupted(slot: Slot, state: RestoredStep): Promise<void> {
    slot.status = 'running';
    const toolResult = state.action === 'finish' ? state.toolResult : undefined;
    const outcome =
      toolResult && (toolResult.status === 'succeeded' || toolResult.status === 'failed')
        ? {
            status: toolResult.status as 'succeeded' | 'failed',
            output: toolResult.output,
            ...(toolResult.error ? { error: toolResult.error } : {}),
            artifacts: [],
          }
        : { status: 'failed' as const, error: interruptedError(slot.step.id), artifacts: [] };
    const result = await endStep(
      slot.step,
      state.attempt,
      state.executionId ?? deriveExecutionId(this.runId, slot.step.id, state.attempt),
      state.startedAt ?? new Date().toISOString(),
      performance.now(),
      outcome,
      { journal: this.#journal },
    );
    if (result.status === 'succeeded') this.#complete(slot, result);
    else await this.#recover(slot, result);
  }

  #enqueue(slot: Slot, attempt: number): void {
    slot.status = 'ready';
    this.#track(this.#schedule(slot, attempt));
  }

  async #schedule(slot: Slot, attempt: number): Promise<void> {
    const priority = -slot.index;
    const job = () => this.#attempt(slot, attempt);
    // The tool slot is taken first, so a step waiting for its tool never holds a global slot.
    const failed = slot.toolQueue
      ? await slot.toolQueue.add(() => this.#global.add(job, { priority }), { priority })
      : await this.#global.add(job, { priority });
    if (failed) await this.#recover(slot, failed);
  }

  /** One attempt inside the concurrency slot; returns the result when it needs the failure policy. */
  async #attempt(slot: Slot, attempt: number): Promise<StepResult | undefined> {
    if (this.#stopped) return undefined;
    const blocker = this.#referencedWithoutOutput(slot);
    if (blocker) {
      const result = this.#emitEnd(
        slot,
        'skipped',
        dependencyError(
          slot.step.id,
          `step "${slot.step.id}" references the output of "${blocker.step.id}", which ${describeOutcome(blocker.result as StepResult)}`,
          { dependency: blocker.step.id, reference: true },
        ),
      );
      this.#track(this.#journal.flush());
      this.#complete(slot, result);
      return undefined;
    }
    slot.status = 'running';
    slot.attempt = attempt;
    this.#running++;
    let result: StepResult;
    try {
      result = await invokeStep(
        slot.step,
        { attempt, references: 'resolve', outputs: this.#outputs, ...(slot.args ? { args: slot.args } : {}) },
        this.#kernel,
      );
    } catch (error) {
      // Only a journal the store refuses gets here: nothing more can be recorded.
      this.#fail(error);
      return undefined;
    } finally {
      this.#running--;
    }
    if (result.status === 'succeeded') {
      // Inside the slot on purpose: dependents are queued before the slot frees, so plan order decides ties.
      this.#complete(slot, result);
      return undefined;
    }
    return result;
  }

  /** A referenced step that ended without output (validation guarantees references point at ancestors). */
  #referencedWithoutOutput(slot: Slot): Slot | undefined {
    const referenced = slot.args
      ? findReferences(slot.args).map((reference) => reference.stepId)
      : (this.#graph.references[slot.index] ?? []);
    for (const stepId of referenced) {
      const index = this.#graph.indexById.get(stepId);
      const target = index === undefined ? undefined : this.#slots[index];
      if (target?.result && target.result.status !== 'succeeded') return target;
    }
    return undefined;
  }

  /** The failure policy, outside the concurrency slot: retry with backoff, the recovery hook, then critical or not. */
  async #recover(slot: Slot, result: StepResult): Promise<void> {
    if (this.#stopped || result.status !== 'failed') {
      this.#complete(slot, result);
      return;
    }
    const error: StepError = result.error ?? toStepError(new Error('the step failed'));
    const policy = { ...DEFAULT_RETRY, ...this.#settings.retry, ...slot.step.retry };
    if (error.retryable && result.attempt < policy.maxAttempts) {
      const delayMs = backoffDelay(policy, result.attempt, this.#settings.random);
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
      if (!this.#stopped) this.#enqueue(slot, result.attempt + 1);
      return;
    }
    const decision = await this.#askHook(slot, result, error);
    if (this.#stopped) {
      this.#complete(slot, result);
      return;
    }
    if (decision) {
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
        this.#enqueue(slot, result.attempt + 1);
        return;
      }
      if (decision.action === 'skip') {
        await this.#skipByDecision(slot, result, decision.reason);
        return;
      }
      this.#complete(slot, result);
      this.#stop('failed', `the recovery hook aborted the run at step "${slot.step.id}"`);
      return;
    }
    this.#complete(slot, result);
    if (slot.step.critical !== false) this.#stop('failed', `critical step "${slot.step.id}" failed`);
  }

  async #askHook(slot: Slot, result: StepResult, error: StepError): Promise<RecoveryDecision | undefined> {
    const hook = this.#settings.onStepFailed;
    if (!hook || result.attempt >= MAX_ATTEMPTS) return undefined;
    slot.status = 'recovering';
    try {
      return normalizeDecision(
        await hook(slot.step, error, {
          runId: this.runId,
          attempt: result.attempt,
          recoveries: slot.recoveries,
          args: slot.args ?? slot.step.args ?? {},
          outputs: this.#outputs,
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

  /** The hook chose `skip`: the step ends `skipped` (keeping its error) and its dependents may run. */
  async #skipByDecision(slot: Slot, failed: StepResult, reason: string | undefined): Promise<void> {
    const error = failed.error ?? toStepError(new Error('the step failed'));
    const event = this.#journal.emit({
      type: 'step-end',
      stepId: slot.step.id,
      result: {
        ...failed,
        status: 'skipped',
        error: {
          ...error,
          message: `skipped by the recovery hook${reason ? ` (${reason})` : ''}: ${error.message}`,
          details: { ...error.details, recovery: 'skip' },
        },
      },
    });
    await this.#journal.flush();
    this.#complete(slot, (event as { result: StepResult }).result);
  }

  /** Records a final result and lets the graph move: dependents are released or skipped. */
  #complete(slot: Slot, result: StepResult): void {
    if (slot.result) return;
    slot.result = result;
    slot.status = result.status;
    this.#done++;
    if (result.status === 'succeeded') this.#outputs.set(slot.step.id, result.output);
    if (this.#stopped) return;
    if (letsDependentsRun(result)) {
      for (const dependent of this.#graph.dependents[slot.index] ?? []) {
        const target = this.#slots[dependent] as Slot;
        target.remaining--;
        if (target.remaining === 0 && !target.result && target.status === 'blocked')
          this.#enqueue(target, target.attempt + 1);
      }
    } else {
      this.#skipDependents(slot);
    }
  }

  /** Skips every transitive dependent of `root` that has not ended (E310), in one journal batch. */
  #skipDependents(root: Slot): void {
    const queue: Slot[] = [root];
    let emitted = false;
    for (let head = 0; head < queue.length; head++) {
      const cause = queue[head] as Slot;
      for (const dependent of this.#graph.dependents[cause.index] ?? []) {
        const target = this.#slots[dependent] as Slot;
        if (target.result) continue;
        const result = this.#emitEnd(
          target,
          'skipped',
          dependencyError(
            target.step.id,
            `dependency "${cause.step.id}" ${describeOutcome(cause.result as StepResult)}`,
            {
              dependency: cause.step.id,
              root: root.step.id,
            },
          ),
        );
        target.result = result;
        target.status = 'skipped';
        this.#done++;
        emitted = true;
        queue.push(target);
      }
    }
    if (emitted) this.#track(this.#journal.flush());
  }

  /** Journals a `step-end` for a step that never ran its tool in this attempt; returns the stored result. */
  #emitEnd(slot: Slot, status: 'skipped' | 'cancelled', error: StepError): StepResult {
    const result: StepResult = {
      stepId: slot.step.id,
      tool: slot.step.tool,
      status,
      error,
      executionId: deriveExecutionId(this.runId, slot.step.id, slot.attempt),
      attempt: slot.attempt,
      startedAt: new Date().toISOString(),
      durationMs: 0,
    };
    const event = this.#journal.emit({ type: 'step-end', stepId: slot.step.id, result });
    return (event as { result: StepResult }).result;
  }

  #stop(kind: 'cancelled' | 'failed', reason: string): void {
    if (this.#stopped) return;
    this.#stopped = { kind, reason };
    this.#controller.abort(new StepwiseError(ErrorCodes.STEP_CANCELLED, reason));
  }

  /** The journal refused a write: stop everything; the result rejects with this error. */
  #fail(error: unknown): void {
    this.#fatal ??= { error };
    this.#stop('failed', `the journal failed: ${error instanceof Error ? error.message : String(error)}`);
  }

  #track(work: Promise<void>): void {
    this.#pending++;
    work
      .catch((error: unknown) => this.#fail(error))
      .finally(() => {
        this.#pending--;
        this.#settle();
      });
  }

  #settle(): void {
    if (this.#pending === 0) this.#resolveIdle();
  }

  async #finish(): Promise<RunResult> {
    if (this.#fatal) {
      await this.#journal.close().catch(() => undefined);
      throw this.#fatal.error;
    }
    const reason = this.#stopped?.reason ?? 'the run stopped';
    let emitted = false;
    for (const index of this.#graph.order) {
      const slot = this.#slots[index] as Slot;
      if (slot.result) continue;
      const blocker = (this.#graph.dependencies[index] ?? [])
        .map((dependency) => this.#slots[dependency] as Slot)
        .find((dependency) => dependency.result && blocksDependents(dependency.result));
      slot.result = blocker
        ? this.#emitEnd(
            slot,
            'skipped',
            dependencyError(
              slot.step.id,
              `dependency "${blocker.step.id}" ${describeOutcome(blocker.result as StepResult)}`,
              {
                dependency: blocker.step.id,
              },
            ),
          )
        : this.#emitEnd(slot, 'cancelled', cancelledError(slot.step.id, reason));
      slot.status = slot.result.status;
      this.#done++;
      emitted = true;
    }
    if (emitted) await this.#journal.flush();
    const results = this.#slots.map((slot) => slot.result as StepResult);
    return finishRun(this.#journal, {
      plan: this.#plan,
      engine: 'dag',
      status: this.#status(results),
      steps: results,
      durationMs: Math.max(0, Date.now() - this.#startedAt),
    });
  }

  #status(results: readonly StepResult[]): RunStatus {
    if (this.#stopped) return this.#stopped.kind;
    return results.every((result) => result.status === 'succeeded') ? 'completed' : 'partial';
  }
}
