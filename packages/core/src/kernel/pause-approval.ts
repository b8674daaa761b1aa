import { ErrorCodes, type StepError } from '../errors.js';
import type { ApprovalResponseEvent } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';

/** Answers journaled by `respond()` and not yet applied, by step id; a resumed session hands them to the kernel. */
export type JournaledAnswers = ReadonlyMap<string, ApprovalResponseEvent>;

/** The approval request of a waiting step: nothing of the step ran (E410); `respond()`, then `resume`. */
export function waitingError(stepId: string, tool: string): StepError {
  return {
    code: ErrorCodes.APPROVAL_WAITING,
    message: `${tool} waits for a person's answer to its approval request`,
    retryable: false,
    location: stepId,
  };
}

/**
 * The `pause` approval mode: applies a journaled answer for the step (journaling the decision
 * with the person as its source), or reports `waiting` so the step ends without running.
 */
export async function answerOrWait(
  journal: RunJournal,
  answers: JournaledAnswers | undefined,
  base: { readonly stepId: string; readonly executionId: string; readonly tool: string },
): Promise<{ decision: 'approved' | 'denied' | 'skipped' | 'waiting'; reason?: string }> {
  const answer = answers?.get(base.stepId);
  if (!answer) return { decision: 'waiting' };
  const decision =
    answer.decision === 'deny' ? 'denied' : answer.decision === 'skip' ? 'skipped' : ('approved' as const);
  await journal.record({
    type: 'approval-decision',
    ...base,
    decision,
    source: 'handler',
    by: answer.by,
    ...(answer.reason === undefined ? {} : { reason: answer.reason }),
  });
  return { decision, ...(answer.reason === undefined ? {} : { reason: answer.reason }) };
}
