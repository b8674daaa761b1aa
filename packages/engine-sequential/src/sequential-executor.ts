import { randomUUID } from 'node:crypto';
import {
  ErrorCodes,
  finishRun,
  foldRun,
  invokeStep,
  type KernelContext,
  MemoryStore,
  type Plan,
  type PlanAuthorization,
  planInvalidError,
  type RunEvent,
  type RunHandle,
  type RunJournal,
  type RunResult,
  type RunStatus,
  type RunStore,
  readAll,
  reopenRun,
  resultFromFold,
  type Step,
  type StepResult,
  StepwiseError,
  startRun,
  validatePlan,
  verifyAuthorization,
} from '@stepwise/core';
import { checkApprovedPlan } from './approved-plan.js';
import { deferred } from './deferred.js';
import { type ExecutorState, IDLE_STATE, type Phase, snapshotState } from './executor-state.js';
import { createLazyRunHandle } from './lazy-run-handle.js';
import { endInterruptedStep, runProgress } from './recover-run.js';
import type { SequentialExecutorOptions, StepPosition } from './sequential-options.js';

export const ENGINE_NAME = 'sequential';

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
   * when there is no such run), settles the step a crash left in flight, and journals
   * `run-resume`. A run that already ended is loaded as a replay of its recorded result.
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

const noopLog = () => undefined;

/** Creates an executor for one plan. `sequentialEngine` makes one per run. */
export function createSequentialExecutor(options: SequentialExecutorOptions): SequentialExecutor {
  const store = options.store ?? new MemoryStore();
  const log = options.log ?? noopLog;
  const controller = new AbortController();
  if (options.signal) {
    if (options.signal.aborted) controller.abort(options.signal.reason);
    else options.signal.addEventListener('abort', () => controller.abort(options.signal?.reason), { once: true });
  }
  const listeners = [options.onEvent, options.onRunEvent].filter(
    (listener): listener is (event: RunEvent) => void => listener !== undefined,
  );
  const result = deferred<RunResult>();
  const journalReady = deferred<RunJournal | undefined>();

  let runId: string | undefined;
  let plan: Plan | undefined;
  let authorization: PlanAuthorization | undefined;
  let journal: RunJournal | undefined;
  let session: Promise<void> | undefined;
  let phase: Phase = { status: 'idle' };
  let replayed = false;
  let snapshot: ExecutorState | undefined = IDLE_STATE;
  let queue: Promise<unknown> = Promise.resolve();
  const completed: StepResult[] = [];
  const attempts = new Map<string, number>();
  let kernel: KernelContext | undefined;

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

  const deliver = (event: RunEvent) => {
    for (const listener of listeners) safely('onEvent', () => listener(event));
  };

  /** Hands listeners what is already journaled, then follows the journal live. */
  const follow = async (held: RunJournal) => {
    if (listeners.length > 0) {
      for (const event of await readAll(store, held.runId)) if (event.seq <= held.lastSeq) deliver(event);
      held.subscribe(deliver);
    }
  };

  const owner = () => options.owner ?? `${process.pid}:${randomUUID()}`;
  const session_ = () => ({
    store,
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(options.redactor ? { redactor: options.redactor } : {}),
  });

  const position = (index: number): StepPosition => ({ index, total: plan?.steps.length ?? 0 });

  /** The store refused the journal (or the lease was lost): nothing more can be recorded. */
  const abandon = async (error: unknown) => {
    transition({ status: 'failed', failedStep: undefined, result: undefined, error });
    await journal?.close().catch(() => undefined);
    journalReady.reject(error);
    result.reject(error);
  };

  const finish = async (status: RunStatus, stopped?: StepResult) => {
    const steps = stopped ? [...completed, stopped] : completed.slice();
    const durationMs = steps.reduce((total, step) => total + step.durationMs, 0);
    let ended: RunResult;
    try {
      ended = await finishRun(journal as RunJournal, {
        plan: plan as Plan,
        engine: ENGINE_NAME,
        status,
        steps,
        durationMs,
      });
    } catch (error) {
      await abandon(error);
      throw error;
    }
    transition(
      status === 'completed'
        ? { status: 'completed', result: ended }
        : { status: 'failed', failedStep: stopped, result: ended, error: stopped?.error },
    );
    result.resolve(ended);
  };

  /** After a step ended: continue, complete, or stop the run; callbacks then see the new state. */
  const settle = async (index: number, stepResult: StepResult): Promise<StepResult> => {
    if (stepResult.status === 'succeeded') {
      completed.push(stepResult);
      if (completed.length === plan?.steps.length) await finish('completed');
      else transition({ status: 'step-running', running: false });
      safely('onStepComplete', () => options.onStepComplete?.(stepResult, position(index)));
      return stepResult;
    }
    await finish(stepResult.status === 'cancelled' ? 'cancelled' : 'failed', stepResult);
    safely('onStepFailed', () => options.onStepFailed?.(stepResult, position(index)));
    return stepResult;
  };

  /** A run that already ended: its recorded result and journal, and no tool call. */
  const replay = async (id: string) => {
    const events = await readAll(store, id);
    const recorded = resultFromFold(foldRun(events, id)) as RunResult;
    for (const step of recorded.steps) if (step.status === 'succeeded') completed.push(step);
    const stopped = recorded.steps.find((step) => step.status !== 'succeeded');
    replayed = true;
    transition(
      recorded.status === 'completed'
        ? { status: 'completed', result: recorded }
        : { status: 'failed', failedStep: stopped, result: recorded, error: stopped?.error },
    );
    for (const event of events) deliver(event);
    journalReady.resolve(undefined);
    result.resolve(recorded);
  };

  const resumeRun = async (id: string) => {
    const resumer = owner();
    const reopened = await reopenRun({ ...session_(), runId: id, owner: resumer });
    const { run } = reopened;
    try {
      if (run.engine !== ENGINE_NAME) {
        throw new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          `run ${id} was started by the ${run.engine} engine; resume it with that engine`,
          { location: id },
        );
      }
      plan = reopened.plan;
      if (run.status !== 'running') {
        await reopened.journal.close();
        await replay(id);
        return;
      }
      // The registry may have changed since the crash: the plan must still pass, and its approval hold.
      const validation = validatePlan(reopened.plan, { tools: options.tools, engine: 'sequential' });
      if (!validation.ok) throw planInvalidError(validation.problems);
      verifyAuthorization(validation.plan, run.authorization);
      authorization = run.authorization;
    } catch (error) {
      await reopened.journal.close().catch(() => undefined);
      throw error;
    }
    journal = reopened.journal;
    await follow(journal);
    const progress = runProgress(plan, run, options.allowRerunInterrupted ?? false);
    await journal.record({
      type: 'run-resume',
      owner: resumer,
      interrupted: progress.inFlight ? [{ stepId: progress.inFlight.step.id, action: progress.inFlight.action }] : [],
    });
    journalReady.resolve(journal);
    completed.push(...progress.completed);
    transition({ status: 'plan-loaded' });
    const { inFlight } = progress;
    if (progress.stopped) await finish('failed', progress.stopped);
    else if (inFlight?.action === 'rerun') attempts.set(inFlight.step.id, inFlight.state.attempt + 1);
    else if (inFlight) await settle(inFlight.index, await endInterruptedStep(inFlight, run, journal));
    else if (completed.length === plan.steps.length) await finish('completed');
  };

  const startOrReplay = async (lookedTwice = false): Promise<void> => {
    const id = runId as string;
    const existing = await store.getRun(id);
    if (existing && existing.status !== 'running') return replay(id);
    if (existing) return resumeRun(id);
    try {
      journal = await startRun({
        ...session_(),
        runId: id,
        plan: plan as Plan,
        engine: ENGINE_NAME,
        // Verified against the plan when it was loaded: the digest need not be hashed again.
        ...(authorization ? { authorization, planDigest: authorization.planDigest } : {}),
        owner: owner(),
      });
    } catch (error) {
      // Another process started the same approved run between our look and our lease.
      if (StepwiseError.isInstance(error) && error.code === ErrorCodes.JOURNAL_CONFLICT && !lookedTwice)
        return startOrReplay(true);
      throw error;
    }
    await follow(journal);
    journalReady.resolve(journal);
  };

  const begin = (start: () => Promise<void>): Promise<void> => {
    session ??= (async () => {
      if (controller.signal.aborted) {
        throw new StepwiseError(ErrorCodes.STEP_CANCELLED, 'the run was cancelled before it started', {
          location: runId,
        });
      }
      await start();
    })().catch(async (error) => {
      if (phase.status !== 'failed') await abandon(error);
      throw error;
    });
    return session;
  };

  const isOver = () => phase.status === 'completed' || phase.status === 'failed';

  const runNext = async (): Promise<StepResult | undefined> => {
    if (isOver()) return undefined;
    const index = completed.length;
    const step = (plan as Plan).steps[index] as Step;
    if (controller.signal.aborted) {
      await finish('cancelled');
      return undefined;
    }
    transition({ status: 'step-running', running: true });
    safely('onStepStart', () => options.onStepStart?.(step, position(index)));
    // The journal is fixed once the run started or resumed: one context serves every step.
    kernel ??= {
      runId: runId as string,
      journal: journal as RunJournal,
      registry: options.tools,
      workspace: options.workspace,
      signal: controller.signal,
      approvals: options.approvals,
      defaultTimeoutMs: options.defaultTimeoutMs,
      log,
    };
    let stepResult: StepResult;
    try {
      stepResult = await invokeStep(step, { attempt: attempts.get(step.id) ?? 1, references: 'literal' }, kernel);
    } catch (error) {
      await abandon(error);
      throw error;
    }
    return settle(index, stepResult);
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
        { location: 'executor' },
      );
    }
  };

  const beginLoaded = () => begin(() => startOrReplay());

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
      await begin(() => resumeRun(id));
      return this.state;
    },
    executeStep() {
      return serialized(async () => {
        requireLoaded();
        await beginLoaded();
        return runNext();
      });
    },
    execute() {
      return serialized(async () => {
        requireLoaded();
        await beginLoaded();
        while (!isOver()) await runNext();
        return result.promise;
      });
    },
    handle() {
      requireLoaded();
      return createLazyRunHandle({
        runId: runId as string,
        store,
        journal: journalReady.promise,
        result: result.promise,
        cancel: (reason) => this.cancel(reason),
      });
    },
    cancel(reason) {
      controller.abort(reason ?? 'run cancelled');
    },
  };
}
