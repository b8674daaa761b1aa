import type { Artifact, RunEvent, StepError, StepResult } from '@stepwise/core';
import { type FoldedRun, foldRun, type ModelCallEvent } from '@stepwise/core/store';
import { goalProgressByStep } from './report-goal-progress.js';
import { type AttemptEntry, attemptHistory, type RevisionEntry, revisionHistory } from './run-history.js';
import { type RunTimings, stepTimings, type WaitSpan } from './step-timing.js';

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
  /** Time inside this attempt spent waiting for a person (an approval asked of a handler). */
  readonly waitingMs: number;
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
  /** Working time of all its attempts (waits for a person excluded). */
  readonly toolMs: number | undefined;
  /** Time it waited for a person (approval or question), inside attempts or while the run was waiting. */
  readonly waitingMs: number;
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
  /** Step ids on the critical path, from the first to the last; never through a cancelled step. */
  readonly criticalPath: readonly string[];
  /** The step the report opens on when something failed (see `failingStepOf`). */
  readonly failingStepId: string | undefined;
  /** Wall-clock span of the run in ms. */
  readonly span: number;
  readonly eventCount: number;
  readonly resumes: readonly { readonly at: number; readonly owner: string }[];
  /** Each stretch a step waited for a person: drawn apart from the bars, never on the critical path. */
  readonly waits: readonly WaitSpan[];
  /** Time at least one step waited for a person. */
  readonly waitingMs: number;
  /** Revisions of the plan while it ran. */
  readonly revisions: readonly RevisionEntry[];
  /** Set when `steps` are a part of the run (a live page of a large run): the whole run's counts. */
  readonly whole?: { readonly stepStatuses: readonly string[]; readonly executions: number };
  /** A code agent's attempts, with their validation and rollback. */
  readonly attempts: readonly AttemptEntry[];
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
 * The chain of steps that decides the run's length when no one keeps it waiting: each step's
 * weight is its working time (waits for a person excluded); a step finishes `weight` after the
 * latest-finishing of its dependencies; from the step that finishes last, walk back through the
 * dependency that finishes last. Steps without a weight (never ran, cancelled) are left out.
 */
export function criticalPath(
  weights: ReadonlyMap<string, number>,
  dependencies: ReadonlyMap<string, readonly string[]>,
): string[] {
  const finish = new Map<string, number>();
  // Depth-first without recursion: a chain of many thousand steps must not overflow the stack.
  for (const root of weights.keys()) {
    const stack: { id: string; expanded: boolean }[] = [{ id: root, expanded: false }];
    const entered = new Set<string>();
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { id: string; expanded: boolean };
      if (finish.has(top.id)) {
        stack.pop();
        continue;
      }
      const uses = (dependencies.get(top.id) ?? []).filter((id) => weights.has(id));
      if (!top.expanded) {
        top.expanded = true;
        entered.add(top.id);
        // A cycle (validation refuses them) is cut where it closes.
        for (const id of uses) if (!finish.has(id) && !entered.has(id)) stack.push({ id, expanded: false });
        continue;
      }
      stack.pop();
      const start = uses.reduce((latest, id) => Math.max(latest, finish.get(id) ?? 0), 0);
      finish.set(top.id, start + (weights.get(top.id) ?? 0));
    }
  }
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

/** Events of one step that the side panel lists. */
interface StepEvents {
  approvals: Record<string, unknown>[];
  retries: Record<string, unknown>[];
  progress: Record<string, unknown>[];
  modelCalls: StepDetail['modelCalls'][number][];
}

interface JournalWalk {
  readonly bars: Omit<ExecutionBar, 'critical' | 'waitingMs'>[];
  readonly perStep: Map<string, StepEvents>;
  readonly resumes: { at: number; owner: string }[];
}

/** Attempts become bars (closed by step-end, a new attempt or a resume); the rest is bucketed per step. */
function walkJournal(events: readonly RunEvent[], time: (at: string) => number, running: boolean): JournalWalk {
  const open = new Map<string, { stepId: string; executionId: string; attempt: number; start: number }>();
  const walk: JournalWalk = { bars: [], perStep: new Map(), resumes: [] };
  const closeOpen = (stepId: string, end: number, status: ExecutionBar['status'], error?: StepError) => {
    const attempt = open.get(stepId);
    if (!attempt) return;
    open.delete(stepId);
    walk.bars.push({ ...attempt, end: Math.max(end, attempt.start), status, ...(error ? { error } : {}) });
  };
  const approvalRequests = new Map<string, Record<string, unknown>>();
  for (const event of events) {
    switch (event.type) {
      case 'run-resume':
        // Whatever was in flight died with the previous process.
        for (const stepId of [...open.keys()]) closeOpen(stepId, time(event.at), 'interrupted');
        walk.resumes.push({ at: time(event.at), owner: event.owner });
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
      case 'step-end':
        if (open.get(event.stepId)?.executionId === event.result.executionId) {
          closeOpen(event.stepId, time(event.at), event.result.status, event.result.error);
        }
        break;
      default:
        recordStepEvent(event, bucketOf(walk.perStep, event), approvalRequests);
    }
  }
  const last = events.length > 0 ? time((events[events.length - 1] as RunEvent).at) : 0;
  for (const stepId of [...open.keys()]) closeOpen(stepId, last, running ? 'running' : 'interrupted');
  return walk;
}

function bucketOf(perStep: Map<string, StepEvents>, event: RunEvent): StepEvents | undefined {
  if (!('stepId' in event)) return undefined;
  let entry = perStep.get(event.stepId);
  if (!entry) {
    entry = { approvals: [], retries: [], progress: [], modelCalls: [] };
    perStep.set(event.stepId, entry);
  }
  return entry;
}

function recordStepEvent(
  event: RunEvent,
  bucket: StepEvents | undefined,
  approvalRequests: Map<string, Record<string, unknown>>,
): void {
  if (!bucket) return;
  switch (event.type) {
    case 'approval-request': {
      const { executionId, tool, effect, args, reason } = event;
      const request = { executionId, tool, effect, args, reason, requestedAt: event.at };
      approvalRequests.set(event.executionId, request);
      bucket.approvals.push(request);
      return;
    }
    case 'question-ask': {
      const { requestId, cause, question, turn } = event;
      const asked = { executionId: requestId, question, cause, turn, requestedAt: event.at };
      approvalRequests.set(requestId, asked);
      bucket.approvals.push(asked);
      return;
    }
    case 'approval-response': {
      // A person's answer, journaled while the run waited; for an approval the decision follows on resume.
      const request = approvalRequests.get(event.requestId);
      if (request)
        Object.assign(request, {
          answer: event.answer,
          answeredBy: event.by,
          answeredAt: event.at,
          response: event.decision,
        });
      return;
    }
    case 'approval-decision': {
      const { decision, source, by, reason } = event;
      const decided = { decision, source, by, reason, decidedAt: event.at };
      const request = approvalRequests.get(event.executionId);
      if (request && request.decision === undefined) Object.assign(request, decided);
      else bucket.approvals.push({ executionId: event.executionId, tool: event.tool, ...decided });
      return;
    }
    case 'step-retry': {
      const { attempt, nextAttempt, delayMs, error } = event;
      bucket.retries.push({ attempt, nextAttempt, delayMs, error, at: event.at });
      return;
    }
    case 'recovery-decision':
      bucket.retries.push({ attempt: event.attempt, decision: event.decision, reason: event.reason, at: event.at });
      return;
    case 'progress-report':
      bucket.progress.push({ percent: event.percent, message: event.message, at: event.at });
      return;
    case 'model-call': {
      const { turn, model, request, response, usage, latencyMs, error } = event;
      bucket.modelCalls.push({ turn, model, request, response, usage, latencyMs, error, at: event.at });
      return;
    }
    default:
      return;
  }
}

function toolCallDetails(run: FoldedRun): Map<string, ToolCallDetail[]> {
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
  return callsByStep;
}

/** Tool calls made inside agentic steps (executions that are not attempts): marks under the bars. */
function callMarks(run: FoldedRun, bars: readonly ExecutionBar[], time: (at: string) => number): CallMark[] {
  const attemptIds = new Set(bars.map((bar) => bar.executionId));
  return [...run.executions.values()]
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
}

/**
 * The step a failed run is about: the first to fail (by the end of its last attempt), preferring
 * critical steps, since those decide a `failed` run. `undefined` when nothing failed.
 */
export function failingStepOf(steps: readonly StepDetail[], bars: readonly ExecutionBar[]): string | undefined {
  const ends = new Map<string, number>();
  for (const bar of bars) ends.set(bar.stepId, Math.max(ends.get(bar.stepId) ?? 0, bar.end));
  const failed = steps
    .filter((step) => step.status === 'failed')
    .sort(
      (a, b) =>
        Number(b.critical) - Number(a.critical) ||
        (ends.get(a.id) ?? Number.POSITIVE_INFINITY) - (ends.get(b.id) ?? Number.POSITIVE_INFINITY),
    );
  return failed[0]?.id;
}

/**
 * The timeline's bars, each marked when its step is on the critical path (by tool time and retry
 * delays), with the time it waited for a person.
 */
function timelineBars(run: FoldedRun, walk: JournalWalk, timings: RunTimings) {
  const dependencies = new Map((run.plan?.steps ?? []).map((step) => [step.id, step.dependsOn ?? []]));
  const ran = new Set(walk.bars.map((bar) => bar.stepId));
  const weights = new Map<string, number>();
  for (const [stepId, timing] of timings.steps) {
    // A cancelled step was stopped by something else (a failing critical step, the host), and a
    // step still waiting has not worked yet: neither decided the run's length.
    const status = run.steps.get(stepId)?.status;
    if (status === 'cancelled' || status === 'waiting' || !ran.has(stepId)) continue;
    weights.set(stepId, timing.toolMs + timing.retryDelayMs);
  }
  const path = criticalPath(weights, dependencies);
  const onPath = new Set(path);
  const bars = walk.bars
    .map((bar) => ({
      ...bar,
      critical: onPath.has(bar.stepId),
      waitingMs: (timings.steps.get(bar.stepId)?.waits ?? []).reduce(
        (total, wait) => total + Math.max(0, Math.min(bar.end, wait.end) - Math.max(bar.start, wait.start)),
        0,
      ),
    }))
    .sort((a, b) => a.start - b.start || a.attempt - b.attempt);
  return { path, onPath, bars };
}

/** Every planned step with its outcome, calls, approvals, retries, progress and timings. */
function stepDetails(
  run: FoldedRun,
  events: readonly RunEvent[],
  walk: JournalWalk,
  timings: RunTimings,
  onPath: ReadonlySet<string>,
): StepDetail[] {
  const callsByStep = toolCallDetails(run);
  const goalProgress = goalProgressByStep(events);
  return (run.plan?.steps ?? []).map((step) => {
    const state = run.steps.get(step.id);
    const extra = walk.perStep.get(step.id);
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
      toolMs: timings.steps.get(step.id)?.toolMs,
      waitingMs: timings.steps.get(step.id)?.waitingMs ?? 0,
    };
  });
}

/** Builds the report's model from a run's journal (events in seq order). */
export function buildReportModel(events: readonly RunEvent[]): ReportModel {
  const run = foldRun(events);
  const origin = events.length > 0 ? Date.parse((events[0] as RunEvent).at) : 0;
  const last = events.length > 0 ? Date.parse((events[events.length - 1] as RunEvent).at) : 0;
  const time = (at: string) => Date.parse(at) - origin;
  const walk = walkJournal(events, time, run.status === 'running');
  const timings = stepTimings(events);
  const { path, onPath, bars } = timelineBars(run, walk, timings);
  const steps = stepDetails(run, events, walk, timings, onPath);

  const { runId, planId, planDigest, engine, goal, status, createdAt, finishedAt, durationMs, usage } = run;
  return {
    run: {
      runId,
      planId,
      planDigest,
      engine,
      goal,
      status,
      createdAt,
      finishedAt,
      durationMs,
      usage,
      authorization: run.authorization,
    },
    steps,
    bars,
    calls: callMarks(run, bars, time),
    criticalPath: path,
    failingStepId: failingStepOf(steps, bars),
    span: Math.max(1, last - origin),
    eventCount: events.length,
    resumes: walk.resumes,
    waits: [...timings.steps.values()].flatMap((timing) => timing.waits),
    waitingMs: timings.waitingMs,
    revisions: revisionHistory(run.revisions),
    attempts: capStrings(attemptHistory(events)) as AttemptEntry[],
  };
}
