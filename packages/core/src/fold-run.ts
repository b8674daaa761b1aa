import { applyPlanRevise } from './apply-plan-revise.js';
import type { Artifact, Effect } from './define-tool.js';
import { ErrorCodes, type StepError, StepwiseError } from './errors.js';
import type { ModelCallEvent, PlanReviseEvent, RunEvent, StepResult, TokenUsage } from './events.js';
import type { PlanAuthorization } from './plan-digest.js';
import type { Plan } from './plan-schema.js';
import type { ApprovalRecord, ExecutionRecord, RunState, RunSummary } from './run-store.js';

export interface StepState {
  readonly stepId: string;
  /** `running`: started, not ended (in flight if the run is resumed). `retrying`: waits for its next attempt. */
  status: 'pending' | 'running' | 'retrying' | StepResult['status'];
  attempt: number;
  executionId: string | undefined;
  startedAt: string | undefined;
  /** The current attempt journaled a `tool-call`: the tool may have run. */
  toolCalled: boolean;
  /** Whether the tool of the current attempt's call is idempotent. */
  idempotent: boolean | undefined;
  /** The current attempt's `tool-result`, when the tool finished but the step did not end. */
  toolResult: { status: string; output?: unknown; error?: StepError } | undefined;
  result: StepResult | undefined;
  usage: TokenUsage | undefined;
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
  readonly executions: Map<string, ExecutionState>;
  readonly approvals: ApprovalRecord[];
  readonly modelCalls: ModelCallEvent[];
  /** Every revision of the plan, oldest first; `plan` and `planDigest` are the latest. */
  readonly revisions: PlanReviseEvent[];
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
    revisions: [],
    usage: undefined,
  };
}

export function addUsage(a: TokenUsage | undefined, b: TokenUsage | undefined): TokenUsage | undefined {
  if (!a) return b;
  if (!b) return a;
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

function stepOf(run: FoldedRun, stepId: string): StepState {
  let step = run.steps.get(stepId);
  if (!step) {
    step = {
      stepId,
      status: 'pending',
      attempt: 0,
      executionId: undefined,
      startedAt: undefined,
      toolCalled: false,
      idempotent: undefined,
      toolResult: undefined,
      result: undefined,
      usage: undefined,
    };
    run.steps.set(stepId, step);
  }
  return step;
}

/**
 * Applies one event to `run` (mutating it). Throws E502 on a seq gap: a journal with a hole
 * is not a journal to resume from.
 */
export function applyEvent(run: FoldedRun, event: RunEvent): FoldedRun {
  if (event.seq !== run.lastSeq + 1) {
    throw new StepwiseError(
      ErrorCodes.JOURNAL_CONFLICT,
      `journal of run ${run.runId} jumps from seq ${run.lastSeq} to ${event.seq}`,
      { location: `${run.runId}#${event.seq}` },
    );
  }
  run.lastSeq = event.seq;
  run.updatedAt = event.at;
  switch (event.type) {
    case 'run-start':
      run.planId = event.planId;
      run.planDigest = event.planDigest;
      run.plan = event.plan;
      run.engine = event.engine;
      run.goal = event.plan.goal;
      run.authorization = event.authorization;
      run.parentRunId = event.parentRunId;
      run.options = event.options;
      run.createdAt = event.at;
      for (const step of event.plan.steps) stepOf(run, step.id);
      break;
    case 'run-resume':
      run.status = 'running';
      run.finishedAt = undefined;
      break;
    case 'step-start': {
      const step = stepOf(run, event.stepId);
      step.status = 'running';
      step.attempt = event.attempt;
      step.executionId = event.executionId;
      step.startedAt = event.at;
      step.toolCalled = false;
      step.idempotent = undefined;
      step.toolResult = undefined;
      step.result = undefined;
      break;
    }
    case 'tool-call': {
      const step = stepOf(run, event.stepId);
      step.toolCalled = true;
      step.idempotent = step.idempotent === false ? false : event.idempotent;
      run.executions.set(event.executionId, {
        executionId: event.executionId,
        stepId: event.stepId,
        attempt: event.attempt,
        turn: event.turn,
        tool: event.tool,
        effect: event.effect,
        idempotent: event.idempotent,
        args: event.args,
        startedAt: event.at,
        finishedAt: undefined,
        status: 'running',
        durationMs: undefined,
        output: undefined,
        error: undefined,
        artifacts: [],
      });
      break;
    }
    case 'tool-result': {
      const execution = run.executions.get(event.executionId);
      if (execution) {
        execution.finishedAt = event.at;
        execution.status = event.status;
        execution.durationMs = event.durationMs;
        execution.output = event.output;
        execution.error = event.error;
        execution.artifacts = event.artifacts ?? [];
      }
      const step = stepOf(run, event.stepId);
      if (step.executionId === event.executionId) {
        step.toolResult = {
          status: event.status,
          output: event.output,
          error: event.error,
        };
      }
      break;
    }
    case 'approval-decision':
      run.approvals.push({
        executionId: event.executionId,
        stepId: event.stepId,
        decision: event.decision,
        source: event.source,
        by: event.by,
        reason: event.reason,
        at: event.at,
      });
      break;
    case 'step-retry':
      stepOf(run, event.stepId).status = 'retrying';
      break;
    case 'model-call': {
      run.modelCalls.push(event);
      const step = stepOf(run, event.stepId);
      step.usage = addUsage(step.usage, event.usage);
      run.usage = addUsage(run.usage, event.usage);
      break;
    }
    case 'step-end': {
      const step = stepOf(run, event.stepId);
      step.status = event.result.status;
      step.attempt = event.result.attempt;
      step.executionId = event.result.executionId;
      step.startedAt = event.result.startedAt;
      step.result = event.result;
      break;
    }
    case 'plan-revise':
      applyPlanRevise(run, event, stepOf);
      break;
    case 'run-end':
      run.status = event.status;
      run.finishedAt = event.at;
      run.durationMs = event.durationMs;
      if (event.usage) run.usage = event.usage;
      break;
    default:
      break;
  }
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
