import {
  ErrorCodes,
  type Plan,
  type PlanAuthorization,
  type RunHandle,
  type RunResult,
  type RunStore,
  type Step,
  type StepResult,
  StepwiseError,
} from '@stepwise/core';
import {
  createLazyRunHandle,
  messageOf,
  type PolicyEngine,
  type ProgressRunHandle,
  type RevisionRequest,
  type SessionHooks,
  type SessionOpened,
} from '@stepwise/core/engine';
import { approvedPlanOf } from './approved-plan.js';
import { type Deferred, deferred } from './deferred.js';
import { type ExecutorState, IDLE_STATE, type Phase, snapshotState } from './executor-state.js';
import type { SequentialExecutorOptions, StepPosition } from './sequential-options.js';
import { StepGate } from './step-gate.js';
import { ENGINE_NAME, strictEngine } from './strict-engine.js';

/** A strict run's handle: events, result, cancel, and `revise` (the revision needs its own approval). */
export type SequentialRunHandle = RunHandle & Pick<ProgressRunHandle, 'revise'>;

export { ENGINE_NAME };

/** A step-by-step executor: load an approved plan, then run it one step at a time or all at once. */
export interface SequentialExecutor {
  /** A snapshot of the state machine; a new object after every transition. */
  readonly state: ExecutorState;
  /** The run's id once a plan (or run) is loaded. */
  readonly runId: string | undefined;
  readonly store: RunStore;
  /** Settles when the run ends: its RunResult, or the error that stopped it being journaled. */
  readonly result: Promise<RunResult>;
  /**
   * Validates the plan and the authorization (synchronously; throws E001/E201/E202/E002/E003
   * before anything runs) and moves `idle → plan-loaded`. Nothing is journaled yet.
   */
  load(
    plan: unknown,
    authorization: PlanAuthorization | undefined,
    options?: { readonly runId?: string },
  ): ExecutorState;
  /**
   * Loads an existing run for resume: takes its lease (E501 when another owner holds it, E505
   * when there is no such run) and journals `run-resume`. A run that already ended is loaded as
   * a replay of its recorded result. `authorization` approves the run's current plan when it was
   * revised without an approval (the run ended `waiting`).
   */
  loadRun(runId: string, options?: { readonly authorization?: PlanAuthorization }): Promise<ExecutorState>;
  /**
   * Runs the next step (the first call also starts, resumes or replays the run) and returns its
   * result, or `undefined` when no step ran because the run is over. Calls are serialized.
   */
  executeStep(): Promise<StepResult | undefined>;
  /** Runs every remaining step, stopping at the first that does not succeed. */
  execute(): Promise<RunResult>;
  /** The run's events (recorded ones first, then live), its result, `cancel`, and `revise` (a running plan). */
  handle(): SequentialRunHandle;
  /** Cancels the run: the step in flight is cancelled, no further step starts. */
  cancel(reason?: string): void;
}

/**
 * Creates an executor for one plan; `sequentialEngine` makes one per run. It drives the shared
 * scheduler under the strict policy, holding it at a gate between steps while the host steps.
 */
export function createSequentialExecutor(options: SequentialExecutorOptions): SequentialExecutor {
  return new StrictExecutor(options, strictEngine(options));
}

/**
 * An executor over the strict policy engine an engine shares between its runs: one engine, and so
 * one memory of the plans it has found valid, for every run, not one per run.
 */
export function createSharedExecutor(options: SequentialExecutorOptions, engine: PolicyEngine): SequentialExecutor {
  return new StrictExecutor(options, engine);
}

class StrictExecutor implements SequentialExecutor {
  readonly store: RunStore;
  readonly #options: SequentialExecutorOptions;
  readonly #engine: PolicyEngine;
  readonly #controller = new AbortController();
  readonly #gate = new StepGate();
  readonly #result = deferred<RunResult>();
  readonly #handle = deferred<ProgressRunHandle>();
  readonly #completed: StepResult[] = [];
  #runId: string | undefined;
  #plan: Plan | undefined;
  #authorization: PlanAuthorization | undefined;
  #digest: string | undefined;
  #phase: Phase = { status: 'idle' };
  #replayed = false;
  #snapshot: ExecutorState | undefined = IDLE_STATE;
  #session: Promise<void> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #stepEnded: Deferred<StepResult | undefined> | undefined;
  /** The callback of the step that ended the run: called once the run's end is journaled. */
  #lastCallback: (() => void) | undefined;

  constructor(options: SequentialExecutorOptions, engine: PolicyEngine) {
    this.#options = options;
    this.#engine = engine;
    this.store = this.#engine.store;
    const signal = options.signal;
    if (signal?.aborted) this.#controller.abort(signal.reason);
    else signal?.addEventListener('abort', () => this.#controller.abort(signal.reason), { once: true });
  }

  get state(): ExecutorState {
    // Built on read, not per step: copying completedSteps on every step would be quadratic.
    this.#snapshot ??= this.#runId
      ? snapshotState(this.#phase, {
          runId: this.#runId,
          plan: this.#plan,
          completed: this.#completed,
          replayed: this.#replayed,
        })
      : IDLE_STATE;
    return this.#snapshot;
  }

  get runId(): string | undefined {
    return this.#runId;
  }

  get result(): Promise<RunResult> {
    return this.#result.promise;
  }

  load(input: unknown, approval: PlanAuthorization | undefined, loadOptions: { readonly runId?: string } = {}) {
    this.#requireIdle();
    const approved = approvedPlanOf(this.#engine.check(input), approval, loadOptions.runId);
    this.#plan = approved.plan;
    this.#digest = approved.digest;
    this.#authorization = approved.authorization;
    this.#runId = approved.runId;
    this.#transition({ status: 'plan-loaded' });
    return this.state;
  }

  async loadRun(
    id: string,
    resumeOptions: { readonly authorization?: PlanAuthorization } = {},
  ): Promise<ExecutorState> {
    this.#requireIdle();
    this.#runId = id;
    this.#authorization = resumeOptions.authorization;
    this.#transition({ status: 'plan-loaded' });
    await this.#begin();
    return this.state;
  }

  executeStep(): Promise<StepResult | undefined> {
    return this.#serialized(async () => {
      this.#requireLoaded();
      await this.#begin();
      return this.#nextStep();
    });
  }

  execute(): Promise<RunResult> {
    return this.#serialized(async () => {
      this.#requireLoaded();
      await this.#begin();
      this.#gate.open();
      return this.#result.promise;
    });
  }

  handle(): SequentialRunHandle {
    this.#requireLoaded();
    return createLazyRunHandle(
      {
        runId: this.#runId as string,
        store: this.store,
        journal: this.#handle.promise,
        result: this.#result.promise,
        cancel: (reason) => this.cancel(reason),
      },
      { revise: async (request: RevisionRequest) => (await this.#handle.promise).revise(request) },
    );
  }

  cancel(reason?: string): void {
    this.#controller.abort(reason ?? 'run cancelled');
    // A run held between steps must see the cancel: the gate lets the scheduler notice it.
    this.#gate.open();
  }

  #transition(next: Phase): void {
    this.#phase = next;
    this.#snapshot = undefined;
  }

  #safely(name: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#options.log?.('warn', `${name} callback threw; the run continues`, {
        error: messageOf(error),
      });
    }
  }

  #position(index: number): StepPosition {
    return { index, total: this.#plan?.steps.length ?? 0 };
  }

  #isOver(): boolean {
    return this.#phase.status === 'completed' || this.#phase.status === 'failed';
  }

  #ended(final: RunResult): void {
    const stopped = final.steps.find((step) => step.status !== 'succeeded');
    this.#transition(
      final.status === 'completed'
        ? { status: 'completed', result: final }
        : { status: 'failed', failedStep: stopped, result: final, error: stopped?.error },
    );
    this.#lastCallback?.();
    this.#result.resolve(final);
  }

  #abandoned(error: unknown): void {
    if (this.#phase.status !== 'failed') {
      this.#transition({ status: 'failed', failedStep: undefined, result: undefined, error });
    }
    this.#result.reject(error);
    this.#stepEnded?.resolve(undefined);
  }

  #onOpened(info: SessionOpened, opened: Deferred<void>): void {
    this.#plan = info.plan;
    this.#replayed = info.kind === 'replayed';
    for (const step of info.ended) if (step.status === 'succeeded') this.#completed.push(step);
    if (!this.#replayed) this.#transition({ status: 'plan-loaded' });
    opened.resolve();
  }

  #onStepStart(step: Step, index: number): void {
    this.#transition({ status: 'step-running', running: true });
    this.#safely('onStepStart', () => this.#options.onStepStart?.(step, this.#position(index)));
  }

  #onStepEnd(stepResult: StepResult, index: number): void {
    const options = this.#options;
    if (stepResult.status === 'succeeded') this.#completed.push(stepResult);
    const callback =
      stepResult.status === 'succeeded'
        ? () => this.#safely('onStepComplete', () => options.onStepComplete?.(stepResult, this.#position(index)))
        : () => this.#safely('onStepFailed', () => options.onStepFailed?.(stepResult, this.#position(index)));
    if (this.#endsRun(stepResult)) this.#lastCallback = callback;
    else {
      this.#transition({ status: 'step-running', running: false });
      callback();
    }
    this.#stepEnded?.resolve(stepResult);
  }

  #endsRun(step: StepResult): boolean {
    return step.status !== 'succeeded' || this.#completed.length === this.#plan?.steps.length;
  }

  /** Starts, resumes or replays the run once; settles when its session is open (a replay: when it ended). */
  #begin(): Promise<void> {
    this.#session ??= this.#open().catch((error: unknown) => {
      this.#handle.reject(error);
      this.#abandoned(error);
      throw error;
    });
    return this.#session;
  }

  async #open(): Promise<void> {
    if (this.#controller.signal.aborted) {
      throw new StepwiseError(ErrorCodes.STEP_CANCELLED, 'the run was cancelled before it started', {
        location: this.#runId,
      });
    }
    const opened = deferred<void>();
    const hooks: SessionHooks = {
      prevalidated: true,
      ...(this.#digest === undefined ? {} : { planDigest: this.#digest }),
      onOpened: (info) => this.#onOpened(info, opened),
      observer: {
        beforeStep: () => this.#gate.pass(),
        onStepStart: (step, index) => this.#onStepStart(step, index),
        onStepEnd: (step, index) => this.#onStepEnd(step, index),
      },
    };
    const onEvent = this.#options.onRunEvent;
    const runOptions = { signal: this.#controller.signal, ...(onEvent ? { onEvent } : {}) };
    const handle = this.#plan
      ? this.#engine.run(this.#plan, { ...runOptions, authorization: this.#authorization, runId: this.#runId }, hooks)
      : this.#engine.resume(
          this.#runId as string,
          this.#authorization ? { ...runOptions, authorization: this.#authorization } : runOptions,
          hooks,
        );
    this.#handle.resolve(handle);
    handle.result.then(
      (final) => this.#ended(final),
      (error) => this.#abandoned(error),
    );
    await Promise.race([opened.promise, handle.result]);
    if (this.#replayed) await handle.result;
  }

  async #nextStep(): Promise<StepResult | undefined> {
    if (this.#isOver()) return undefined;
    this.#stepEnded = deferred<StepResult | undefined>();
    this.#gate.grant();
    const step = await Promise.race([this.#stepEnded.promise, this.#result.promise.then(() => undefined)]);
    this.#stepEnded = undefined;
    if (step && this.#endsRun(step)) await this.#result.promise;
    return step;
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #requireLoaded(): void {
    if (!this.#runId) {
      throw new StepwiseError(
        ErrorCodes.NOT_AUTHORIZED,
        'no approved plan is loaded: call load(plan, authorization) first',
        {
          location: 'executor',
        },
      );
    }
  }

  #requireIdle(): void {
    if (this.#runId) {
      throw new StepwiseError(
        ErrorCodes.CONFIG_INVALID,
        `this executor already holds run ${this.#runId}; create one executor per plan`,
        { location: 'executor' },
      );
    }
  }
}
