import {
  ErrorCodes,
  type Plan,
  type PlanAuthorization,
  type ProgressRunHandle,
  type RunEvent,
  type RunHandle,
  type RunResult,
  type RunStore,
  type SessionHooks,
  type SessionOpened,
  type Step,
  type StepResult,
  StepwiseError,
} from '@stepwise/core';
import { checkApprovedPlan } from './approved-plan.js';
import { type Deferred, deferred } from './deferred.js';
import { type ExecutorState, IDLE_STATE, type Phase, snapshotState } from './executor-state.js';
import type { SequentialExecutorOptions, StepPosition } from './sequential-options.js';
import { StepGate } from './step-gate.js';
import { ENGINE_NAME, strictEngine } from './strict-engine.js';

export { ENGINE_NAME };

/** The seed's executor: load an approved plan, then run it one step at a time or all at once. */
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
   * a replay of its recorded result.
   */
  loadRun(runId: string): Promise<ExecutorState>;
  /**
   * Runs the next step (the first call also starts, resumes or replays the run) and returns its
   * result, or `undefined` when no step ran because the run is over. Calls are serialized.
   */
  executeStep(): Promise<StepResult | undefined>;
  /** Runs every remaining step, stopping at the first that does not succeed. */
  execute(): Promise<RunResult>;
  /** The run's events (recorded ones first, then live), its result, and `cancel`. */
  handle(): RunHandle;
  /** Cancels the run: the step in flight is cancelled, no further step starts. */
  cancel(reason?: string): void;
}

/**
 * Creates an executor for one plan; `sequentialEngine` makes one per run. It drives the shared
 * scheduler under the strict policy, holding it at a gate between steps while the host steps.
 */
export function createSequentialExecutor(options: SequentialExecutorOptions): SequentialExecutor {
  const engine = strictEngine(options);
  const { store } = engine;
  const log = options.log ?? (() => undefined);
  const controller = new AbortController();
  if (options.signal?.aborted) controller.abort(options.signal.reason);
  else options.signal?.addEventListener('abort', () => controller.abort(options.signal?.reason), { once: true });
  const gate = new StepGate();
  const result = deferred<RunResult>();
  const handleReady = deferred<ProgressRunHandle>();

  let runId: string | undefined;
  let plan: Plan | undefined;
  let authorization: PlanAuthorization | undefined;
  let phase: Phase = { status: 'idle' };
  let replayed = false;
  let snapshot: ExecutorState | undefined = IDLE_STATE;
  let session: Promise<void> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let stepEnded: Deferred<StepResult | undefined> | undefined;
  /** The callback of the step that ended the run: called once the run's end is journaled. */
  let lastCallback: (() => void) | undefined;
  const completed: StepResult[] = [];

  const transition = (next: Phase) => {
    phase = next;
    snapshot = undefined;
  };
  const safely = (name: string, call: () => void) => {
    try {
      call();
    } catch (error) {
      log('warn', `${name} callback threw; the run continues`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };
  const position = (index: number): StepPosition => ({ index, total: plan?.steps.length ?? 0 });
  const isOver = () => phase.status === 'completed' || phase.status === 'failed';

  const ended = (final: RunResult) => {
    const stopped = final.steps.find((step) => step.status !== 'succeeded');
    transition(
      final.status === 'completed'
        ? { status: 'completed', result: final }
        : { status: 'failed', failedStep: stopped, result: final, error: stopped?.error },
    );
    lastCallback?.();
    result.resolve(final);
  };
  const abandoned = (error: unknown) => {
    if (phase.status !== 'failed') transition({ status: 'failed', failedStep: undefined, result: undefined, error });
    result.reject(error);
    stepEnded?.resolve(undefined);
  };

  const hooks = (opened: Deferred<void>): SessionHooks => ({
    prevalidated: true,
    onOpened: (info: SessionOpened) => {
      plan = info.plan;
      replayed = info.kind === 'replayed';
      for (const step of info.ended) if (step.status === 'succeeded') completed.push(step);
      if (!replayed) transition({ status: 'plan-loaded' });
      opened.resolve();
    },
    observer: {
      beforeStep: () => gate.pass(),
      onStepStart: (step: Step, index: number) => {
        transition({ status: 'step-running', running: true });
        safely('onStepStart', () => options.onStepStart?.(step, position(index)));
      },
      onStepEnd: (stepResult: StepResult, index: number) => {
        if (stepResult.status === 'succeeded') completed.push(stepResult);
        const endsRun = stepResult.status !== 'succeeded' || completed.length === plan?.steps.length;
        const callback =
          stepResult.status === 'succeeded'
            ? () => safely('onStepComplete', () => options.onStepComplete?.(stepResult, position(index)))
            : () => safely('onStepFailed', () => options.onStepFailed?.(stepResult, position(index)));
        if (endsRun) lastCallback = callback;
        else {
          transition({ status: 'step-running', running: false });
          callback();
        }
        stepEnded?.resolve(stepResult);
      },
    },
  });

  /** Starts, resumes or replays the run once; settles when its session is open (a replay: when it ended). */
  const begin = (): Promise<void> => {
    session ??= (async () => {
      if (controller.signal.aborted) {
        throw new StepwiseError(ErrorCodes.STEP_CANCELLED, 'the run was cancelled before it started', {
          location: runId,
        });
      }
      const opened = deferred<void>();
      const runOptions = { signal: controller.signal, ...(options.onRunEvent ? { onEvent: options.onRunEvent } : {}) };
      const handle = plan
        ? engine.run(plan, { ...runOptions, authorization, runId }, hooks(opened))
        : engine.resume(runId as string, runOptions, hooks(opened));
      handleReady.resolve(handle);
      handle.result.then(ended, abandoned);
      await Promise.race([opened.promise, handle.result]);
      if (replayed) await handle.result;
    })().catch((error: unknown) => {
      handleReady.reject(error);
      abandoned(error);
      throw error;
    });
    return session;
  };

  const nextStep = async (): Promise<StepResult | undefined> => {
    if (isOver()) return undefined;
    stepEnded = deferred<StepResult | undefined>();
    gate.grant();
    const step = await Promise.race([stepEnded.promise, result.promise.then(() => undefined)]);
    stepEnded = undefined;
    if (step && (step.status !== 'succeeded' || completed.length === plan?.steps.length)) await result.promise;
    return step;
  };

  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work);
    queue = next.catch(() => undefined);
    return next;
  };
  const requireLoaded = () => {
    if (!runId) {
      throw new StepwiseError(
        ErrorCodes.NOT_AUTHORIZED,
        'no approved plan is loaded: call load(plan, authorization) first',
        {
          location: 'executor',
        },
      );
    }
  };
  const requireIdle = () => {
    if (runId) {
      throw new StepwiseError(
        ErrorCodes.CONFIG_INVALID,
        `this executor already holds run ${runId}; create one executor per plan`,
        {
          location: 'executor',
        },
      );
    }
  };

  return {
    get state() {
      // Built on read, not per step: copying completedSteps on every step would be quadratic.
      snapshot ??= runId ? snapshotState(phase, { runId, plan, completed, replayed }) : IDLE_STATE;
      return snapshot;
    },
    get runId() {
      return runId;
    },
    store,
    result: result.promise,
    load(input, approval, loadOptions = {}) {
      requireIdle();
      const approved = checkApprovedPlan(input, approval, options.tools, loadOptions.runId);
      plan = approved.plan;
      authorization = approved.authorization;
      runId = approved.runId;
      transition({ status: 'plan-loaded' });
      return this.state;
    },
    async loadRun(id) {
      requireIdle();
      runId = id;
      transition({ status: 'plan-loaded' });
      await begin();
      return this.state;
    },
    executeStep() {
      return serialized(async () => {
        requireLoaded();
        await begin();
        return nextStep();
      });
    },
    execute() {
      return serialized(async () => {
        requireLoaded();
        await begin();
        gate.open();
        return result.promise;
      });
    },
    handle() {
      requireLoaded();
      return lazyHandle(runId as string, handleReady.promise, result.promise, (reason) => this.cancel(reason));
    },
    cancel(reason) {
      controller.abort(reason ?? 'run cancelled');
      // A run held between steps must see the cancel: the gate lets the scheduler notice it.
      gate.open();
    },
  };
}

/** The handle before the run is asked for: iteration follows the real handle once the run begins. */
function lazyHandle(
  runId: string,
  handle: Promise<ProgressRunHandle>,
  result: Promise<RunResult>,
  cancel: (reason?: string) => void,
): RunHandle {
  return {
    runId,
    result,
    cancel,
    async *[Symbol.asyncIterator](): AsyncGenerator<RunEvent, void, undefined> {
      // A run that never began (cancelled first, store refused) throws the error `result` rejects with.
      yield* await handle;
    },
  };
}
