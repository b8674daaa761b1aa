import { ErrorCodes } from '../errors.js';
import { addUsage } from './add-usage.js';
import { applyPlanRevise } from './apply-plan-revise.js';
import type { RunEvent, RunEventType } from './events.js';
import type { FoldChanges } from './fold-changes.js';
import type { FoldedRun, StepState } from './fold-run.js';
import { addPlanSteps, stepOf } from './fold-steps.js';
import { checkJournalVersion, journalVersionOf } from './journal-version.js';

/** How one event type changes a folded run (in place), telling `changes` (when given) what it changed. */
type FoldHandler<T extends RunEventType> = (
  run: FoldedRun,
  event: Extract<RunEvent, { type: T }>,
  changes: FoldChanges | undefined,
) => void;

// The run: started, resumed, ended.

const runStart: FoldHandler<'run-start'> = (run, event, changes) => {
  checkJournalVersion(run.runId, journalVersionOf(event), `${run.runId}#${event.seq}`);
  run.planId = event.planId;
  run.planDigest = event.planDigest;
  run.plan = event.plan;
  run.engine = event.engine;
  run.goal = event.plan.goal;
  run.authorization = event.authorization;
  run.parentRunId = event.parentRunId;
  run.options = event.options;
  run.createdAt = event.at;
  addPlanSteps(run, event.plan, changes);
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

const runContinue: FoldHandler<'run-continue'> = (run, event, changes) => {
  run.status = 'running';
  run.finishedAt = undefined;
  const retry = new Set(event.retry);
  const skip = new Set(event.skip);
  for (const step of run.steps.values()) {
    if (skip.has(step.stepId)) {
      changes?.step(step.stepId);
      step.skipRequest = {
        ...(event.reason === undefined ? {} : { reason: event.reason }),
        ...(event.by === undefined ? {} : { by: event.by }),
      };
    } else if (retry.has(step.stepId) || endedByStop(step)) {
      changes?.step(step.stepId);
      step.continueAttempt = !retry.has(step.stepId) && askedQuestion(run, step);
      // The attempt number stays: the next attempt is attempt + 1, and the journal keeps the ended one.
      step.status = 'pending';
      step.endedAt = undefined;
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

const stepStart: FoldHandler<'step-start'> = (run, event, changes) => {
  const step = stepOf(run, event.stepId, changes);
  step.status = 'running';
  step.attempt = event.attempt;
  if (event.tool !== undefined) step.tool = event.tool;
  step.executionId = event.executionId;
  step.startedAt = event.at;
  step.endedAt = undefined;
  step.toolCalled = false;
  step.idempotent = undefined;
  step.toolResult = undefined;
  step.result = undefined;
  step.goalProgress = undefined;
  step.skipRequest = undefined;
  step.continueAttempt = false;
};

const stepRetry: FoldHandler<'step-retry'> = (run, event, changes) => {
  stepOf(run, event.stepId, changes).status = 'retrying';
};

const stepEnd: FoldHandler<'step-end'> = (run, event, changes) => {
  const step = stepOf(run, event.stepId, changes);
  step.status = event.result.status;
  step.attempt = event.result.attempt;
  if (event.result.tool !== undefined) step.tool = event.result.tool;
  step.executionId = event.result.executionId;
  step.startedAt = event.result.startedAt;
  step.endedAt = event.at;
  step.result = event.result;
  step.skipRequest = undefined;
  step.continueAttempt = false;
};

// Tool executions: called (after approval), then their result.

const toolCall: FoldHandler<'tool-call'> = (run, event, changes) => {
  const step = stepOf(run, event.stepId, changes);
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
    callSeq: event.seq,
    resultSeq: undefined,
    finishedAt: undefined,
    status: 'running',
    durationMs: undefined,
    output: undefined,
    error: undefined,
    artifacts: [],
  });
  changes?.executions.add(event.executionId);
};

const toolResult: FoldHandler<'tool-result'> = (run, event, changes) => {
  const execution = run.executions.get(event.executionId);
  if (execution) {
    changes?.executions.add(event.executionId);
    execution.resultSeq = event.seq;
    execution.finishedAt = event.at;
    execution.status = event.status;
    execution.durationMs = event.durationMs;
    execution.output = event.output;
    execution.error = event.error;
    execution.artifacts = event.artifacts ?? [];
  }
  const step = stepOf(run, event.stepId, changes);
  if (step.executionId === event.executionId) {
    step.toolResult = { status: event.status, output: event.output, error: event.error };
  }
};

const approvalDecision: FoldHandler<'approval-decision'> = (run, event, changes) => {
  changes?.approvals.push(event);
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

const modelCall: FoldHandler<'model-call'> = (run, event, changes) => {
  run.modelCalls.push(event);
  changes?.modelCalls.push(event);
  const step = stepOf(run, event.stepId, changes);
  step.usage = addUsage(step.usage, event.usage);
  run.usage = addUsage(run.usage, event.usage);
};

const goalProgress: FoldHandler<'goal-progress'> = (run, event, changes) => {
  stepOf(run, event.stepId, changes).goalProgress = event;
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
  'plan-revise': applyPlanRevise,
};
