import { ErrorCodes } from '@stepwise/core';
import { deriveExecutionId } from '@stepwise/core/engine';
import type { QuestionAskEvent } from '@stepwise/core/store';
import { type GoalStepSession, type Outcome, stepError } from './goal-step-session.js';
import { personAnswerNote } from './step-prompt.js';

type Cause = QuestionAskEvent['cause'];

/**
 * The person's answer to the question this attempt stopped on, when it stopped for `cause`: hands
 * it to the model as the next message (a limit grants its amount again) and returns true, so the
 * loop goes on instead of ending the step.
 */
export function deliverAnswer(session: GoalStepSession, cause: Cause): boolean {
  const pending = session.pendingAnswer;
  if (pending?.cause !== cause || pending.answer === undefined) return false;
  session.pendingAnswer = undefined;
  const { limits } = session.context.settings;
  if (cause === 'turns') session.maxTurns += session.context.step.maxTurns ?? limits.maxTurns;
  if (cause === 'tool-failures') session.maxToolFailures += limits.maxToolFailures;
  session.push({ role: 'user', content: personAnswerNote(pending.question, pending.answer) });
  return true;
}

/**
 * What ends the step when the loop cannot go on by itself: `failure`, or, when the policy asks a
 * person for this cause, a journaled question and the step ending `waiting` (E410).
 */
export function askOrFail(session: GoalStepSession, cause: Cause, question: string, failure: Outcome): Outcome {
  const { ask } = session.context.settings;
  if (!(cause === 'blocked' ? ask.blocked : ask.limits)) return failure;
  const { kernel, attempt, step } = session.context;
  const requestId = deriveExecutionId(kernel.runId, step.id, attempt, `t${session.turn}.q${session.questionCount}`);
  session.questionCount++;
  kernel.journal.emit({
    type: 'question-ask',
    stepId: step.id,
    requestId,
    attempt,
    turn: session.turn,
    cause,
    question,
  });
  return {
    status: 'waiting',
    error: stepError(ErrorCodes.APPROVAL_WAITING, `the step waits for a person's answer: ${question}`, step.id, {
      requestId,
      cause,
    }),
  };
}
