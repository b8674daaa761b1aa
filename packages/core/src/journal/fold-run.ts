import { ErrorCodes, type StepError, StepwiseError } from '../errors.js';
import type { PlanAuthorization } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import type { Artifact, Effect } from '../tools/define-tool.js';
import type {
  GoalProgressEvent,
  ModelCallEvent,
  PlanReviseEvent,
  ProcessStartEvent,
  QuestionAskEvent,
  RunEvent,
  StepResult,
  TokenUsage,
} from './events.js';
import type { FoldChanges } from './fold-changes.js';
import { foldEventHandlers } from './fold-event-handlers.js';
import type { ApprovalRecord, ExecutionRecord, RunState, RunSummary } from './run-store.js';

// Kept here for the modules that import it with the fold.
export { addUsage } from './add-usage.js';

export interface StepState {
  readonly stepId: string;
  /** `running`: started, not ended (in flight if the run is resumed). `retrying`: waits for its next attempt. */
  status: 'pending' | 'running' | 'retrying' | StepResult['status'];
  attempt: number;
  /** The tool of the latest start or end; before the step starts, the plan's. `undefined` for a goal step. */
  tool: string | undefined;
  executionId: string | undefined;
  startedAt: string | undefined;
  /** When the current attempt's `step-end` was journaled; `undefined` while it has not ended. */
  endedAt: string | undefined;
  /** The current attempt journaled a `tool-call`: the tool may have run. */
  toolCalled: boolean;
  /** Whether the tool of the current attempt's call is idempotent. */
  idempotent: boolean | undefined;
  /** The current attempt's `tool-result`, when the tool finished but the step did not end. */
  toolResult: { status: string; output?: unknown; error?: StepError } | undefined;
  result: StepResult | undefined;
  usage: TokenUsage | undefined;
  /** Goal steps: where the current attempt stood after its latest model turn. */
  goalProgress: GoalProgressEvent | undefined;
  /** A `run-continue` named this ended step to be skipped; cleared when its new `step-end` is journaled. */
  skipRequest: { readonly reason?: string; readonly by?: string } | undefined;
  /**
   * A goal step that ended `waiting` on its question, then the run continued: the same attempt goes
   * on (its turns replayed, the person's answer next) instead of a new one.
   */
  continueAttempt: boolean;
}

/** A question a goal step asked a person (`question-ask`), with the answer once `respond()` journaled it. */
export interface QuestionRecord {
  readonly requestId: string;
  readonly stepId: string;
  readonly attempt: number;
  readonly turn: number;
  readonly cause: QuestionAskEvent['cause'];
  readonly question: string;
  readonly at: string;
  answer: string | undefined;
  by: string | undefined;
}

export interface ExecutionState {
  readonly executionId: string;
  readonly stepId: string;
  readonly attempt: number;
  readonly turn: number | undefined;
  readonly tool: string;
  readonly effect: Effect;
  readonly idempotent: boolean;
  readonly args: Record<string, unknown>;
  readonly startedAt: string;
  /** Seq of the `tool-call` (the latest one, when the execution was called again). */
  readonly callSeq: number;
  /** Seq of the `tool-result`, once journaled. */
  resultSeq: number | undefined;
  finishedAt: string | undefined;
  status: ExecutionRecord['status'];
  durationMs: number | undefined;
  output: unknown;
  error: StepError | undefined;
  artifacts: readonly Artifact[];
}

/** A run as its journal tells it. Built by `foldRun`; the same for every store. */
export interface FoldedRun {
  runId: string;
  planId: string;
  planDigest: string;
  plan: Plan | undefined;
  engine: string;
  goal: string | undefined;
  authorization: PlanAuthorization | undefined;
  parentRunId: string | undefined;
  options: Record<string, unknown> | undefined;
  status: RunState;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | undefined;
  lastSeq: number;
  durationMs: number | undefined;
  readonly steps: Map<string, StepState>;
  /**
   * Not readonly: a store that keeps a fold may give it a new map of the calls it still needs (a
   * long-lived map's new tables go to the old generation; see store-sqlite's RunFolds).
   */
  executions: Map<string, ExecutionState>;
  readonly approvals: ApprovalRecord[];
  readonly modelCalls: ModelCallEvent[];
  /** Process groups started by tools whose calls have not ended, by execution id: a crash may have left them running. */
  readonly processes: Map<string, ProcessStartEvent[]>;
  /** Every revision of the plan, oldest first; `plan` and `planDigest` are the latest. */
  readonly revisions: PlanReviseEvent[];
  /** Questions goal steps asked a person, oldest first. */
  readonly questions: QuestionRecord[];
  usage: TokenUsage | undefined;
}

export function emptyRun(runId: string): FoldedRun {
  return {
    runId,
    planId: '',
    planDigest: '',
    plan: undefined,
    engine: '',
    goal: undefined,
    authorization: undefined,
    parentRunId: undefined,
    options: undefined,
    status: 'running',
    createdAt: '',
    updatedAt: '',
    finishedAt: undefined,
    lastSeq: 0,
    durationMs: undefined,
    steps: new Map(),
    executions: new Map(),
    approvals: [],
    modelCalls: [],
    processes: new Map(),
    revisions: [],
    questions: [],
    usage: undefined,
  };
}

/** Keeps the process groups of calls that have not ended: a crash may have left them running. */
function trackProcesses(run: FoldedRun, event: RunEvent): void {
  if (event.type === 'process-start') {
    run.processes.set(event.executionId, [...(run.processes.get(event.executionId) ?? []), event]);
    return;
  }
  // Most runs start no process group: nothing to forget.
  if (run.processes.size === 0) return;
  if (event.type === 'tool-result') {
    // The tool waited for its processes (and killed what they left): nothing of this call is alive.
    run.processes.delete(event.executionId);
  } else if (event.type === 'step-end') {
    for (const [executionId, started] of run.processes) {
      if (started[0]?.stepId === event.stepId) run.processes.delete(executionId);
    }
  }
}

/**
 * Applies one event to `run` (mutating it); `changes`, when given, learns which steps and
 * executions the event changed (what a store's projections write again). Throws E502 on a seq
 * gap: a journal with a hole is not a journal to resume from; E506 on a journal format this
 * release does not read.
 */
export function applyEvent(run: FoldedRun, event: RunEvent, changes?: FoldChanges): FoldedRun {
  if (event.seq !== run.lastSeq + 1) {
    throw new StepwiseError(
      ErrorCodes.JOURNAL_CONFLICT,
      `journal of run ${run.runId} jumps from seq ${run.lastSeq} to ${event.seq}`,
      { location: `${run.runId}#${event.seq}` },
    );
  }
  run.lastSeq = event.seq;
  run.updatedAt = event.at;
  trackProcesses(run, event);
  if (changes) changes.seq = event.seq;
  const handler = foldEventHandlers[event.type] as
    | ((run: FoldedRun, event: RunEvent, changes: FoldChanges | undefined) => void)
    | undefined;
  handler?.(run, event, changes);
  return run;
}

/** A journal, folded: the run's state. Pure: the events are not modified. */
export function foldRun(events: Iterable<RunEvent>, runId?: string): FoldedRun {
  let run: FoldedRun | undefined;
  for (const event of events) {
    run ??= emptyRun(runId ?? event.runId);
    applyEvent(run, event);
  }
  return run ?? emptyRun(runId ?? '');
}

/** Steps started but not ended: what a crash left in flight. */
export function inFlightSteps(run: FoldedRun): StepState[] {
  return [...run.steps.values()].filter((step) => step.status === 'running');
}

export function summarizeRun(run: FoldedRun): RunSummary {
  const stepCounts: Record<string, number> = {};
  for (const step of run.steps.values()) stepCounts[step.status] = (stepCounts[step.status] ?? 0) + 1;
  return {
    runId: run.runId,
    planId: run.planId,
    planDigest: run.planDigest,
    engine: run.engine,
    goal: run.goal,
    status: run.status,
    parentRunId: run.parentRunId,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    finishedAt: run.finishedAt,
    lastSeq: run.lastSeq,
    stepCount: run.steps.size,
    stepCounts,
    usage: run.usage,
  };
}

/** The audit bundle for one execution, from the folded run. */
export function executionRecord(run: FoldedRun, executionId: string): ExecutionRecord | undefined {
  const execution = run.executions.get(executionId);
  if (!execution) return undefined;
  const exitCode = exitCodeOf(execution.output, execution.error);
  return {
    executionId,
    runId: run.runId,
    stepId: execution.stepId,
    attempt: execution.attempt,
    turn: execution.turn,
    tool: execution.tool,
    effect: execution.effect,
    args: execution.args,
    startedAt: execution.startedAt,
    finishedAt: execution.finishedAt,
    status: execution.status,
    durationMs: execution.durationMs,
    exitCode,
    error: execution.error,
    output: execution.output,
    artifacts: execution.artifacts,
    why: {
      planId: run.planId,
      planDigest: run.planDigest,
      goal: run.goal,
      stepDescription: run.plan?.steps.find((step) => step.id === execution.stepId)?.description,
      authorization: run.authorization,
      approvals: run.approvals.filter(
        (approval) => approval.executionId === executionId || approval.stepId === execution.stepId,
      ),
    },
  };
}

/** Commands report `exitCode` in their output (or in error details when they fail). */
export function exitCodeOf(output: unknown, error: StepError | undefined): number | undefined {
  const fromOutput = (output as { exitCode?: unknown } | undefined)?.exitCode;
  if (typeof fromOutput === 'number') return fromOutput;
  const fromError = error?.details?.exitCode;
  return typeof fromError === 'number' ? fromError : undefined;
}
