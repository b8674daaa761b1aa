/*
 * The scheduler's contract. One session of a run: which step runs next, for every engine; the
 * engine's `EnginePolicy` decides retries, the hooks and what a failure stops. Every state change
 * is journaled (through the kernel, or here for steps that end without running).
 *
 * The parts, each given only the data and the few operations it needs (never the scheduler):
 *   session-control  SessionControl  stop, hold, the work still pending, the run's signal
 *   run-loop         RunLoop         release, enqueue, pump, advance; exclusive sections for revisions
 *   attempt-runner   AttemptRunner   runs a queued attempt in its slot: admit, the work, what follows
 *   attempt-gate     AttemptGate     when an attempt may start (admit) and when a retry may (retryLater)
 *   failure-policy   FailurePolicy   recover after a failure, conclude a final result, skip
 *   revise-run       RunRevisions    prepare, commit and adopt plan revisions (adjust-run, insert-steps)
 *   restore-session  restoreSession  puts a resumed session where the journal left it (resume-state)
 *   step-board       StepBoard       the graph's bookkeeping: slots, outputs, counts
 *
 * Vocabulary, one verb per concept:
 *   release   a step enters scheduling: `blocked` until its dependencies let it run, then enqueued
 *   enqueue   an attempt waits (`ready`) for a free slot; `pump` starts queued attempts as slots free
 *   admit     the gate lets a taken attempt start (its turn, a host's hold, its reads, durable dependencies)
 *   attempt   one run of a step's work
 *   retry     a new attempt after a retryable failure, once its backoff is over
 *   recover   after a failed attempt: retry, else the recovery hook's decision, else conclude
 *   conclude  a final result meets the run's rules: the adjust hook, then the stop rule; then advance
 *   advance   the board takes a final result (`StepBoard.end`) and the graph moves: dependents enqueued or skipped
 *   stop      nothing new starts, in-flight steps abort; `cancel` is the host's stop, `journalFailed` a fatal one
 *   hold      an unapproved revision: nothing new starts, in-flight steps finish, the run ends `waiting`
 *   track     work the session waits for before it finishes
 *   finish    the session's end: steps that never ran are ended, `run-end` is journaled
 */
import type { RunResult, RunStatus, StepResult } from '../journal/events.js';
import type { FoldedRun } from '../journal/fold-run.js';
import type { RunJournal } from '../journal/journal.js';
import type { KernelContext } from '../kernel/invoke-step.js';
import type { PlanRevision } from '../plan/plan-revision.js';
import type { Plan } from '../plan/plan-schema.js';
import type { RetainOutputs } from '../run/engine-options.js';
import { finishRun } from '../run/run-session.js';
import type { AdjustScope } from './adjust-run.js';
import { AttemptGate } from './attempt-gate.js';
import { AttemptRunner } from './attempt-runner.js';
import type { DependencyGraph } from './dependency-graph.js';
import { endUnstarted } from './end-unstarted.js';
import type {
  EnginePolicy,
  RevisionRequest,
  RunProgress,
  SchedulerObserver,
  SchedulerStepStatus,
} from './engine-policy.js';
import { FailurePolicy } from './failure-policy.js';
import { restoreSession } from './restore-session.js';
import type { RestoredStep } from './resume-state.js';
import { RunRevisions } from './revise-run.js';
import { type Queued, RunLoop } from './run-loop.js';
import { SessionControl } from './session-control.js';
import { StepBoard } from './step-board.js';
import { StepObserver, warnThrough } from './step-observer.js';
import { isWaiting } from './step-outcome.js';

export interface RunSchedulerInit {
  readonly plan: Plan;
  readonly graph: DependencyGraph;
  readonly journal: RunJournal;
  readonly kernel: Omit<KernelContext, 'signal' | 'journal' | 'runId'>;
  readonly policy: EnginePolicy;
  /** Epoch ms the run started (the first session's start for a resumed run). */
  readonly startedAt: number;
  readonly observer?: SchedulerObserver | undefined;
  /** Default `all` (see `RetainOutputs`). */
  readonly retainOutputs?: RetainOutputs | undefined;
  /** The journal's fold when this session resumes a run. */
  readonly resumed?: FoldedRun | undefined;
}

/**
 * The one scheduler: builds a session's parts and runs the session to its end. A step may start
 * the moment its dependencies let it; it starts when a slot frees, lowest plan index first (so
 * concurrency 1 is array order), under the global and per-tool limits.
 */
export class RunScheduler {
  readonly #init: RunSchedulerInit;
  readonly #control = new SessionControl();
  readonly #board: StepBoard;
  readonly #loop: RunLoop;
  readonly #revisions: RunRevisions;
  readonly #failures: FailurePolicy;
  readonly #kernel: KernelContext;
  readonly #adjust: AdjustScope | undefined;

  constructor(init: RunSchedulerInit) {
    const { journal, policy } = init;
    const control = this.#control;
    this.#init = init;
    // A commit nobody awaits (an idempotent step's end) can fail while other steps run: stop now.
    journal.onFailure((error) => control.journalFailed(error));
    const kernel = kernelContext(init.kernel, journal, control.signal);
    this.#kernel = kernel;
    const warn = warnThrough(kernel.log);
    const observer = new StepObserver(init.observer ?? {}, warn);
    const board = new StepBoard(init.plan, init.graph, journal, init.retainOutputs);
    const tools = kernel.registry;
    // The runner is built last: the loop only calls it once the session executes.
    const run = (queued: Queued): Promise<void> => runner.run(queued);
    const loop = new RunLoop({ board, journal, control, observer, policy, tools, run });
    const revisions = new RunRevisions({ board, journal, control, policy, tools, loop });
    const adjust: AdjustScope | undefined = policy.adjust
      ? { hook: policy.adjust, board, journal, control, revisions, warn }
      : undefined;
    const gate = new AttemptGate({ board, journal, control, observer, policy, loop });
    const failures = new FailurePolicy({ policy, board, journal, control, gate, loop, revisions, adjust, warn });
    const runner: AttemptRunner = new AttemptRunner({
      board,
      kernel,
      policy,
      control,
      observer,
      gate,
      loop,
      failures,
      adjust,
      resumed: init.resumed,
    });
    this.#board = board;
    this.#loop = loop;
    this.#revisions = revisions;
    this.#failures = failures;
    this.#adjust = adjust;
  }

  get runId(): string {
    return this.#init.journal.runId;
  }

  get journal(): RunJournal {
    return this.#init.journal;
  }

  /**
   * Runs the session to its end and journals `run-end`. `restored` carries what a resume found in
   * the journal (`init.resumed` is the fold it came from); without it every step starts from scratch.
   */
  async execute(restored?: ReadonlyMap<string, RestoredStep>): Promise<RunResult> {
    const control = this.#control;
    control.beginWork();
    // A resume has begun once the adjustments a crash cut off are decided: a host's revision waits for them.
    let begun: Promise<void> | undefined;
    try {
      if (restored) {
        const { journal, policy, resumed } = this.#init;
        const scope = {
          board: this.#board,
          journal,
          control,
          policy,
          loop: this.#loop,
          failures: this.#failures,
          resumed,
          kernel: this.#kernel,
          ...(this.#adjust ? { adjust: this.#adjust } : {}),
        };
        begun = restoreSession(scope, restored);
      } else {
        for (const slot of this.#board.slots) this.#loop.release(slot);
      }
    } catch (error) {
      control.journalFailed(error);
    }
    const markBegun = () => control.markBegun();
    if (begun) begun.then(markBegun, markBegun);
    else markBegun();
    control.endWork();
    await control.idle;
    return this.#finish();
  }

  /** Stops the run: nothing new starts, in-flight steps are aborted through their signal and end `cancelled`. */
  cancel(reason = 'the run was cancelled'): void {
    if (this.#board.done === this.#board.slots.length) return;
    this.#control.stop('cancelled', reason);
  }

  /** A revision asked by the host (see `RunRevisions.revise`). */
  revise(request: RevisionRequest): Promise<PlanRevision> {
    return this.#revisions.revise(request);
  }

  progress(): RunProgress {
    const board = this.#board;
    return { done: board.done, total: board.slots.length, running: board.running };
  }

  stepStatus(stepId: string): SchedulerStepStatus | undefined {
    return this.#board.byId(stepId)?.status;
  }

  async #finish(): Promise<RunResult> {
    const { journal, policy, resumed, startedAt } = this.#init;
    const control = this.#control;
    if (control.fatal) {
      await journal.close().catch(() => undefined);
      throw control.fatal.error;
    }
    if (policy.unstarted === 'end' && (control.stopped || !control.held)) {
      const emitted = endUnstarted(this.#board, control.stopCause?.reason ?? 'the run stopped');
      if (emitted) await journal.flush();
    }
    const results = this.#board.slots
      .map((slot) => slot.result)
      .filter((result): result is StepResult => result !== undefined);
    const durationMs =
      policy.duration === 'steps'
        ? results.reduce((total, step) => total + step.durationMs, 0)
        : Math.max(0, Date.now() - startedAt);
    const revisions = [...(resumed?.revisions ?? []), ...this.#revisions.events];
    const digest = this.#revisions.digest;
    return finishRun(journal, {
      plan: this.#board.plan,
      engine: policy.name,
      status: this.#status(results),
      steps: results,
      durationMs,
      planDigest: digest || undefined,
      revisions: revisions.length > 0 ? revisions : undefined,
    });
  }

  #status(results: readonly StepResult[]): RunStatus {
    const control = this.#control;
    if (control.stopCause) return control.stopCause.kind;
    if (control.held) return 'waiting';
    // A step waiting for a person's answer: the run ends `waiting`; respond, then resume.
    if (results.some(isWaiting)) return 'waiting';
    const board = this.#board;
    const all = results.length === board.slots.length && results.every((result) => result.status === 'succeeded');
    return all ? 'completed' : 'partial';
  }
}

/**
 * The run's kernel context, every key written out in one order: the kernel's hot functions all read
 * it, and a spread of the engine's part made an object whose shape V8 could not keep stable across
 * runs (every function that read it was deoptimized again, in bursts, well after warm-up).
 */
function kernelContext(
  part: RunSchedulerInit['kernel'],
  journal: KernelContext['journal'],
  signal: AbortSignal,
): KernelContext {
  // Every key, optional ones too (`satisfies`): a key KernelContext gains must be added here.
  return {
    runId: journal.runId,
    journal,
    registry: part.registry,
    workspace: part.workspace,
    signal,
    approvals: part.approvals,
    defaultTimeoutMs: part.defaultTimeoutMs,
    log: part.log,
    answers: part.answers,
  } satisfies Record<keyof KernelContext, unknown>;
}
