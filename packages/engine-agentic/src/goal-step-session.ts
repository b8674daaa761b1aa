import { type Artifact, ErrorCodes, type StepError, type StepResult, type TokenUsage } from '@stepwise/core';
import { deriveExecutionId, endStep, messageOf, type ToolCallOutcome } from '@stepwise/core/engine';
import type { ApprovalRecord, CriterionStatus, QuestionRecord } from '@stepwise/core/store';
import type { GoalProgress } from './built-in-tools.js';
import type { ChatMessage } from './chat-model.js';
import { isTimeoutReason } from './generate-with-retry.js';
import type { GoalStepContext } from './goal-step-context.js';
import { describeExpectation } from './step-prompt.js';
import { type StepToolset, stepToolset } from './step-toolset.js';

/**
 * How a goal step ends. Each phase of the loop returns one to end the step, or `undefined` to let
 * the loop go on; `runGoalStep` journals the first one returned.
 */
export type Outcome = Pick<ToolCallOutcome, 'status' | 'output' | 'error'>;

/** Loop counters, journaled with every model call so a resumed step continues with the same state. */
export interface LoopState {
  consecutiveToolCalls: number;
  toolFailures: number;
  analyseRequired: boolean;
}

export function render(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value) ?? 'null';
}

export function stepError(
  code: StepError['code'],
  message: string,
  location: string,
  details?: Record<string, unknown>,
): StepError {
  return { code, message, retryable: false, location, ...(details ? { details } : {}) };
}

/** Everything one goal step carries from turn to turn; each phase reads and updates it. */
export class GoalStepSession {
  readonly context: GoalStepContext;
  readonly signal: AbortSignal;
  readonly executionId: string;
  /** Turns this attempt may take: the step's limit, again for each time a person let it go on. */
  maxTurns: number;
  /** Failed tool calls this attempt may make, likewise. */
  maxToolFailures: number;
  /** Questions this attempt asked a person so far (journaled ones included). */
  questionCount: number;
  /** The person's answer to the question this attempt stopped on, until the loop hands it to the model. */
  pendingAnswer: QuestionRecord | undefined;
  readonly startedAt: string;
  /** `performance.now()` at the start, moved back by the time already spent before a resume. */
  readonly started: number;
  readonly toolset: StepToolset;
  readonly conversation: ChatMessage[] = [];
  /** Messages added since the previous model call: journaled with the next call, replayed on resume. */
  appended: ChatMessage[] = [];
  readonly artifacts: Artifact[] = [];
  /** Full text of every successful tool result, oldest first (for `output_matches`). */
  readonly toolOutputs: string[] = [];
  readonly approvals = new Map<string, ApprovalRecord>();
  readonly loop: LoopState = { consecutiveToolCalls: 0, toolFailures: 0, analyseRequired: false };
  usage: TokenUsage | undefined;
  turn = 0;
  /** The goals the model reported last (with `complete_step` or `report_blocked`). */
  goals: readonly GoalProgress[] | undefined;
  /** The step's criteria as last checked; `unchecked` until the model first claims completion. */
  criteria: readonly CriterionStatus[];

  constructor(context: GoalStepContext) {
    const { step, attempt, kernel, settings, replay } = context;
    this.context = context;
    this.signal = kernel.signal ?? new AbortController().signal;
    this.started = performance.now() - (replay ? Date.now() - Date.parse(replay.startedAt) : 0);
    this.startedAt = replay?.startedAt ?? new Date().toISOString();
    this.executionId = deriveExecutionId(kernel.runId, step.id, attempt);
    const questions = replay?.questions ?? [];
    const last = questions.at(-1);
    // Asked after the last journaled turn and answered: the model reads the answer next.
    this.pendingAnswer =
      last?.answer !== undefined && last.turn === (replay?.modelCalls.at(-1)?.turn ?? 0) ? last : undefined;
    const granted = (cause: QuestionRecord['cause']) =>
      questions.filter(
        (question) => question.cause === cause && question.answer !== undefined && question !== this.pendingAnswer,
      ).length;
    this.questionCount = questions.length;
    this.maxTurns = (step.maxTurns ?? settings.limits.maxTurns) * (1 + granted('turns'));
    this.maxToolFailures = settings.limits.maxToolFailures * (1 + granted('tool-failures'));
    this.toolset = stepToolset(kernel.registry, step, settings.estimator);
    for (const approval of replay?.approvals ?? []) this.approvals.set(approval.executionId, approval);
    this.criteria = (step.expect ?? []).map((expectation) => ({
      criterion: describeExpectation(expectation),
      status: 'unchecked',
    }));
  }

  get stepId(): string {
    return this.context.step.id;
  }

  push(message: ChatMessage): void {
    this.conversation.push(message);
    this.appended.push(message);
  }

  /** The execution id of the `index`th call the model asked for in `turn`. */
  callId(turn: number, index: number): string {
    const { kernel, step, attempt } = this.context;
    return deriveExecutionId(kernel.runId, step.id, attempt, `t${turn}.c${index}`);
  }

  failure(code: StepError['code'], message: string, details?: Record<string, unknown>): Outcome {
    return { status: 'failed', error: stepError(code, message, this.stepId, details) };
  }

  /** Journals the limit the step reached (`limit-reach`) and hands back `end`, the outcome it leads to. */
  limitReached(limit: 'turns' | 'tool-failures' | 'token-budget', value: number, end: Outcome): Outcome {
    this.context.kernel.journal.emit({ type: 'limit-reach', stepId: this.stepId, limit, value });
    return end;
  }

  /** How the step ends once its signal aborted: failed (E306) when its own timeout fired, else cancelled (E307). */
  stopped(): Outcome {
    const { step } = this.context;
    const { reason } = this.signal;
    if (isTimeoutReason(reason)) {
      return this.failure(ErrorCodes.STEP_TIMEOUT, `step ${step.id} timed out after ${step.timeoutMs} ms`);
    }
    const message = messageOf(reason ?? 'run cancelled');
    return { status: 'cancelled', error: stepError(ErrorCodes.STEP_CANCELLED, `cancelled: ${message}`, step.id) };
  }

  finish(outcome: Outcome): Promise<StepResult> {
    const { step, attempt, kernel } = this.context;
    const usage = this.usage;
    return endStep(
      step,
      attempt,
      this.executionId,
      this.startedAt,
      this.started,
      { ...outcome, artifacts: this.artifacts, ...(usage ? { usage } : {}) },
      kernel,
    );
  }
}
