import { ErrorCodes } from '../errors.js';
import { addUsage } from './add-usage.js';
import { applyPlanRevise } from './apply-plan-revise.js';
import type { PlanReviseEvent, RunEvent, RunEventType } from './events.js';
import type { FoldedRun, StepState } from './fold-run.js';

/** How one event type changes a folded run (in place). */
type FoldHandler<T extends RunEventType> = (run: FoldedRun, event: Extract<RunEvent, { type: T }>) => void;

export function stepOf(run: FoldedRun, stepId: string): StepState {
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
      goalProgress: undefined,
      skipRequest: undefined,
      continueAttempt: false,
    };
    run.steps.set(stepId, step);
  }
  return step;
}

// The run: started, resumed, ended.

const runStart: FoldHandler<'run-start'> = (run, event) => {
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
};

const runResume: FoldHandler<'run-resume'> = (run, event) => {
  run.status = 'running';
  run.finishedAt = undefined;
  if (event.authorization) run.authorization = event.authorization;
};

/** Steps that ended only because the run stopped (or waited for a person): a continued run runs them again. */
function endedByStop(step: StepState): boolean {
  const result = step.result;
  if (!result) return false;
  return (
    result.status === 'cancelled' ||
    result.status === 'waiting' ||
    (result.status === 'skipped' && result.error?.code === ErrorCodes.DEPENDENCY_FAILED)
  );
}

/** The step ended `waiting` on a question its goal loop asked in that attempt. */
function askedQuestion(run: FoldedRun, step: StepState): boolean {
  const result = step.result;
  if (result?.status !== 'waiting') return false;
  return run.questions.some((question) => question.stepId === step.stepId && question.attempt === result.attempt);
}

const runContinue: FoldHandler<'run-continue'> = (run, event) => {
  run.status = 'running';
  run.finishedAt = undefined;
  const retry = new Set(event.retry);
  const skip = new Set(event.skip);
  for (const step of run.steps.values()) {
    if (skip.has(step.stepId)) {
      step.skipRequest = {
        ...(event.reason === undefined ? {} : { reason: event.reason }),
        ...(event.by === undefined ? {} : { by: event.by }),
      };
    } else if (retry.has(step.stepId) || endedByStop(step)) {
      step.continueAttempt = !retry.has(step.stepId) && askedQuestion(run, step);
      // The attempt number stays: the next attempt is attempt + 1, and the journal keeps the ended one.
      step.status = 'pending';
      step.result = undefined;
      step.toolResult = undefined;
      step.toolCalled = false;
    }
  }
};

const runEnd: FoldHandler<'run-end'> = (run, event) => {
  run.status = event.status;
  run.finishedAt = event.at;
  run.durationMs = event.durationMs;
  if (event.usage) run.usage = event.usage;
};

// A step: each attempt starts, may wait for a retry, ends.

const stepStart: FoldHandler<'step-start'> = (run, event) => {
  const step = stepOf(run, event.stepId);
  step.status = 'running';
  step.attempt = event.attempt;
  step.executionId = event.executionId;
  step.startedAt = event.at;
  step.toolCalled = false;
  step.idempotent = undefined;
  step.toolResult = undefined;
  step.result = undefined;
  step.goalProgress = undefined;
  step.skipRequest = undefined;
  step.continueAttempt = false;
};

const stepRetry: FoldHandler<'step-retry'> = (run, event) => {
  stepOf(run, event.stepId).status = 'retrying';
};

const stepEnd: FoldHandler<'step-end'> = (run, event) => {
  const step = stepOf(run, event.stepId);
  step.status = event.result.status;
  step.attempt = event.result.attempt;
  step.executionId = event.result.executionId;
  step.startedAt = event.result.startedAt;
  step.result = event.result;
  step.skipRequest = undefined;
  step.continueAttempt = false;
};

// Tool executions: called (after approval), then their result.

const toolCall: FoldHandler<'tool-call'> = (run, event) => {
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
};

const toolResult: FoldHandler<'tool-result'> = (run, event) => {
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
    step.toolResult = { status: event.status, output: event.output, error: event.error };
  }
};

const approvalDecision: FoldHandler<'approval-decision'> = (run, event) => {
  run.approvals.push({
    executionId: event.executionId,
    stepId: event.stepId,
    decision: event.decision,
    source: event.source,
    by: event.by,
    reason: event.reason,
    at: event.at,
  });
};

// Goal steps: model turns and the progress after each.

const modelCall: FoldHandler<'model-call'> = (run, event) => {
  run.modelCalls.push(event);
  const step = stepOf(run, event.stepId);
  step.usage = addUsage(step.usage, event.usage);
  run.usage = addUsage(run.usage, event.usage);
};

const goalProgress: FoldHandler<'goal-progress'> = (run, event) => {
  stepOf(run, event.stepId).goalProgress = event;
};

const questionAsk: FoldHandler<'question-ask'> = (run, event) => {
  const { requestId, stepId, attempt, turn, cause, question, at } = event;
  run.questions.push({ requestId, stepId, attempt, turn, cause, question, at, answer: undefined, by: undefined });
};

/** Answers to questions are kept with the question; answers to approvals live in the journal until applied. */
const approvalResponse: FoldHandler<'approval-response'> = (run, event) => {
  if (event.decision !== 'answer') return;
  const question = run.questions.find((entry) => entry.requestId === event.requestId);
  if (!question) return;
  question.answer = event.answer ?? '';
  question.by = event.by;
};

/**
 * The fold, one handler per event type; a type without a handler only advances `lastSeq` (the
 * journal is its record). A new event type that changes run state is one line here.
 */
export const foldEventHandlers: { readonly [T in RunEventType]?: FoldHandler<T> } = {
  'run-start': runStart,
  'run-resume': runResume,
  'run-continue': runContinue,
  'run-end': runEnd,
  'step-start': stepStart,
  'step-retry': stepRetry,
  'step-end': stepEnd,
  'tool-call': toolCall,
  'tool-result': toolResult,
  'approval-decision': approvalDecision,
  'model-call': modelCall,
  'goal-progress': goalProgress,
  'question-ask': questionAsk,
  'approval-response': approvalResponse,
  'plan-revise': (run: FoldedRun, event: PlanReviseEvent) => applyPlanRevise(run, event, stepOf),
};
