import {
  type Artifact,
  type FoldedRun,
  foldRun,
  type ModelCallEvent,
  type RunEvent,
  type StepError,
  type StepResult,
} from '@stepwise/core';
import { goalProgressByStep } from './report-goal-progress.js';

/** One attempt of one step: one bar on the timeline. */
export interface ExecutionBar {
  readonly stepId: string;
  readonly executionId: string;
  readonly attempt: number;
  /** Milliseconds since the run started. */
  readonly start: number;
  readonly end: number;
  /** The attempt's outcome; `interrupted` when the process died during it; `running` when the run is still going. */
  readonly status: StepResult['status'] | 'interrupted' | 'running';
  readonly error?: StepError;
  readonly critical: boolean;
}

/** A tool call inside an agentic step (its own execution id): a thin mark under the step's bar. */
export interface CallMark {
  readonly stepId: string;
  readonly executionId: string;
  readonly tool: string;
  readonly turn: number | undefined;
  readonly start: number;
  readonly end: number;
  readonly status: string;
}

export interface ToolCallDetail {
  readonly executionId: string;
  readonly tool: string;
  readonly effect: string;
  readonly turn?: number;
  readonly args: unknown;
  readonly status: string;
  readonly startedAt: string;
  readonly durationMs?: number;
  readonly output?: unknown;
  readonly error?: StepError;
  readonly artifacts: readonly Artifact[];
}

export interface StepDetail {
  readonly id: string;
  readonly tool: string | undefined;
  readonly description: string | undefined;
  readonly dependsOn: readonly string[];
  readonly critical: boolean;
  readonly args: unknown;
  /** Final status; `pending` for steps that never ran. */
  readonly status: string;
  readonly result: StepResult | undefined;
  readonly calls: readonly ToolCallDetail[];
  readonly approvals: readonly Record<string, unknown>[];
  readonly retries: readonly Record<string, unknown>[];
  readonly progress: readonly Record<string, unknown>[];
  /** Goal steps: where the step stood after each model turn, one line per turn. */
  readonly goalProgress: readonly string[];
  readonly modelCalls: readonly Pick<
    ModelCallEvent,
    'turn' | 'model' | 'request' | 'response' | 'usage' | 'latencyMs' | 'error' | 'at'
  >[];
  readonly onCriticalPath: boolean;
}

/** Everything the HTML report shows, computed from a journal. */
export interface ReportModel {
  readonly run: Pick<
    FoldedRun,
    | 'runId'
    | 'planId'
    | 'planDigest'
    | 'engine'
    | 'goal'
    | 'status'
    | 'createdAt'
    | 'finishedAt'
    | 'durationMs'
    | 'usage'
  > & { readonly authorization: FoldedRun['authorization'] };
  readonly steps: readonly StepDetail[];
  readonly bars: readonly ExecutionBar[];
  /** Tool calls the model made inside agentic steps. */
  readonly calls: readonly CallMark[];
  /** Step ids on the critical path, from the first to the last. */
  readonly criticalPath: readonly string[];
  /** Wall-clock span of the run in ms. */
  readonly span: number;
  readonly eventCount: number;
  readonly resumes: readonly { readonly at: number; readonly owner: string }[];
}

/** Strings longer than this are cut in the embedded data: a report must stay openable. */
const MAX_TEXT = 20_000;

/** Caps long strings (outputs, stdout) so one chatty tool cannot make the report unusable. */
export function capStrings(value: unknown, limit = MAX_TEXT): unknown {
  if (typeof value === 'string') {
    return value.length > limit ? `${value.slice(0, limit)}\n… [${value.length - limit} more characters]` : value;
  }
  if (Array.isArray(value)) return value.map((item) => capStrings(item, limit));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, capStrings(item, limit)]));
  }
  return value;
}

/**
 * The chain of steps that decided the run's length: from the step that finished last, walk to
 * the dependency that finished last, until a step with no dependencies that ran.
 */
export function criticalPath(
  finish: ReadonlyMap<string, number>,
  dependencies: ReadonlyMap<string, readonly string[]>,
): string[] {
  let current: string | undefined;
  let latest = Number.NEGATIVE_INFINITY;
  for (const [id, end] of finish) {
    if (end > latest) {
      latest = end;
      current = id;
    }
  }
  const path: string[] = [];
  const seen = new Set<string>();
  while (current !== undefined && !seen.has(current)) {
    seen.add(current);
    path.unshift(current);
    let next: string | undefined;
    let nextEnd = Number.NEGATIVE_INFINITY;
    for (const dependency of dependencies.get(current) ?? []) {
      const end = finish.get(dependency);
      if (end !== undefined && end > nextEnd) {
        nextEnd = end;
        next = dependency;
      }
    }
    current = next;
  }
  return path;
}

/** Builds the report's model from a run's journal (events in seq order). */
export function buildReportModel(events: readonly RunEvent[]): ReportModel {
  const run = foldRun(events);
  const plan = run.plan;
  const origin = events.length > 0 ? Date.parse((events[0] as RunEvent).at) : 0;
  const last = events.length > 0 ? Date.parse((events[events.length - 1] as RunEvent).at) : 0;
  const time = (at: string) => Date.parse(at) - origin;

  interface OpenAttempt {
    stepId: string;
    executionId: string;
    attempt: number;
    start: number;
  }
  const open = new Map<string, OpenAttempt>();
  const rawBars: Omit<ExecutionBar, 'critical'>[] = [];
  const closeOpen = (stepId: string, end: number, status: ExecutionBar['status']) => {
    const attempt = open.get(stepId);
    if (!attempt) return;
    open.delete(stepId);
    rawBars.push({ ...attempt, end: Math.max(end, attempt.start), status });
  };
  const perStep = new Map<
    string,
    {
      approvals: Record<string, unknown>[];
      retries: Record<string, unknown>[];
      progress: Record<string, unknown>[];
      modelCalls: StepDetail['modelCalls'][number][];
    }
  >();
  const bucket = (stepId: string) => {
    let entry = perStep.get(stepId);
    if (!entry) {
      entry = { approvals: [], retries: [], progress: [], modelCalls: [] };
      perStep.set(stepId, entry);
    }
    return entry;
  };
  const resumes: { at: number; owner: string }[] = [];
  const approvalRequests = new Map<string, Record<string, unknown>>();

  for (const event of events) {
    switch (event.type) {
      case 'run-resume':
        // Whatever was in flight died with the previous process.
        for (const stepId of [...open.keys()]) closeOpen(stepId, time(event.at), 'interrupted');
        resumes.push({ at: time(event.at), owner: event.owner });
        break;
      case 'step-start':
        closeOpen(event.stepId, time(event.at), 'interrupted');
        open.set(event.stepId, {
          stepId: event.stepId,
          executionId: event.executionId,
          attempt: event.attempt,
          start: time(event.at),
        });
        break;
      case 'step-end': {
        const attempt = open.get(event.stepId);
        if (attempt && attempt.executionId === event.result.executionId) {
          open.delete(event.stepId);
          rawBars.push({
            ...attempt,
            end: Math.max(time(event.at), attempt.start),
            status: event.result.status,
            ...(event.result.error ? { error: event.result.error } : {}),
          });
        }
        break;
      }
      case 'approval-request': {
        const request = {
          executionId: event.executionId,
          tool: event.tool,
          effect: event.effect,
          args: event.args,
          reason: event.reason,
          requestedAt: event.at,
        };
        approvalRequests.set(event.executionId, request);
        bucket(event.stepId).approvals.push(request);
        break;
      }
      case 'approval-decision': {
        const decision = {
          decision: event.decision,
          source: event.source,
          by: event.by,
          reason: event.reason,
          decidedAt: event.at,
        };
        const request = approvalRequests.get(event.executionId);
        if (request && request.decision === undefined) Object.assign(request, decision);
        else bucket(event.stepId).approvals.push({ executionId: event.executionId, tool: event.tool, ...decision });
        break;
      }
      case 'step-retry':
        bucket(event.stepId).retries.push({
          attempt: event.attempt,
          nextAttempt: event.nextAttempt,
          delayMs: event.delayMs,
          error: event.error,
          at: event.at,
        });
        break;
      case 'recovery-decision':
        bucket(event.stepId).retries.push({
          attempt: event.attempt,
          decision: event.decision,
          reason: event.reason,
          at: event.at,
        });
        break;
      case 'progress-report':
        bucket(event.stepId).progress.push({ percent: event.percent, message: event.message, at: event.at });
        break;
      case 'model-call':
        bucket(event.stepId).modelCalls.push({
          turn: event.turn,
          model: event.model,
          request: event.request,
          response: event.response,
          usage: event.usage,
          latencyMs: event.latencyMs,
          error: event.error,
          at: event.at,
        });
        break;
      default:
        break;
    }
  }
  const running = run.status === 'running';
  for (const stepId of [...open.keys()]) closeOpen(stepId, last, running ? 'running' : 'interrupted');

  const dependencies = new Map((plan?.steps ?? []).map((step) => [step.id, step.dependsOn ?? []]));
  const finish = new Map<string, number>();
  for (const bar of rawBars) finish.set(bar.stepId, Math.max(finish.get(bar.stepId) ?? 0, bar.end));
  const path = criticalPath(finish, dependencies);
  const onPath = new Set(path);
  const bars = rawBars
    .map((bar) => ({ ...bar, critical: onPath.has(bar.stepId) }))
    .sort((a, b) => a.start - b.start || a.attempt - b.attempt);

  const callsByStep = new Map<string, ToolCallDetail[]>();
  for (const execution of run.executions.values()) {
    const list = callsByStep.get(execution.stepId) ?? [];
    list.push({
      executionId: execution.executionId,
      tool: execution.tool,
      effect: execution.effect,
      ...(execution.turn === undefined ? {} : { turn: execution.turn }),
      args: capStrings(execution.args),
      status: execution.status,
      startedAt: execution.startedAt,
      ...(execution.durationMs === undefined ? {} : { durationMs: execution.durationMs }),
      ...(execution.output === undefined ? {} : { output: capStrings(execution.output) }),
      ...(execution.error ? { error: execution.error } : {}),
      artifacts: capStrings(execution.artifacts) as Artifact[],
    });
    callsByStep.set(execution.stepId, list);
  }

  const attemptIds = new Set(bars.map((bar) => bar.executionId));
  const calls: CallMark[] = [...run.executions.values()]
    .filter((execution) => !attemptIds.has(execution.executionId))
    .map((execution) => {
      const start = time(execution.startedAt);
      return {
        stepId: execution.stepId,
        executionId: execution.executionId,
        tool: execution.tool,
        turn: execution.turn,
        start,
        end: execution.finishedAt ? time(execution.finishedAt) : start + (execution.durationMs ?? 0),
        status: execution.status,
      };
    });

  const goalProgress = goalProgressByStep(events);
  const steps: StepDetail[] = (plan?.steps ?? []).map((step) => {
    const state = run.steps.get(step.id);
    const extra = perStep.get(step.id);
    return {
      id: step.id,
      tool: step.tool,
      description: step.description,
      dependsOn: step.dependsOn ?? [],
      critical: step.critical ?? true,
      args: capStrings(step.args ?? {}),
      status: state?.status ?? 'pending',
      result: state?.result ? (capStrings(state.result) as StepResult) : undefined,
      calls: callsByStep.get(step.id) ?? [],
      approvals: capStrings(extra?.approvals ?? []) as Record<string, unknown>[],
      retries: extra?.retries ?? [],
      progress: extra?.progress ?? [],
      goalProgress: goalProgress.get(step.id) ?? [],
      modelCalls: capStrings(extra?.modelCalls ?? []) as StepDetail['modelCalls'],
      onCriticalPath: onPath.has(step.id),
    };
  });

  return {
    run: {
      runId: run.runId,
      planId: run.planId,
      planDigest: run.planDigest,
      engine: run.engine,
      goal: run.goal,
      status: run.status,
      createdAt: run.createdAt,
      finishedAt: run.finishedAt,
      durationMs: run.durationMs,
      usage: run.usage,
      authorization: run.authorization,
    },
    steps,
    bars,
    calls,
    criticalPath: path,
    span: Math.max(1, last - origin),
    eventCount: events.length,
    resumes,
  };
}
