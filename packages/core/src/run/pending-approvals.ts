import type { ApprovalRequestEvent, ApprovalResponseEvent, QuestionAskEvent, RunEvent } from '../journal/events.js';

/** An approval request of a waiting run that no one has answered yet. */
export interface PendingToolApproval {
  readonly kind: 'approval';
  readonly runId: string;
  /** Answer it with this id (or with the step id). */
  readonly requestId: string;
  readonly stepId: string;
  readonly tool: string;
  readonly effect: ApprovalRequestEvent['effect'];
  /** The call's arguments as journaled (redacted). */
  readonly args: Record<string, unknown>;
  readonly reason: ApprovalRequestEvent['reason'];
  /** When it was asked (ISO). */
  readonly at: string;
}

/** A goal step's question to a person (it reported itself blocked, or reached a loop limit); answer it with `answer`. */
export interface PendingQuestion {
  readonly kind: 'question';
  readonly runId: string;
  readonly requestId: string;
  readonly stepId: string;
  readonly cause: QuestionAskEvent['cause'];
  readonly question: string;
  readonly at: string;
}

/** What a waiting run waits on: an approval (`decision`) or a question (`answer`). */
export type PendingApproval = PendingToolApproval | PendingQuestion;

/**
 * What `approvalState` reads from a journal. Shared with @stepwise/dashboard; not part of the public API.
 * @internal
 */
export interface ApprovalState {
  /** Requests and questions without a decision or an answer, by step id. */
  readonly pending: ReadonlyMap<string, PendingApproval>;
  /** Answers to approval requests not yet applied by a resumed run, by step id. */
  readonly answers: ReadonlyMap<string, ApprovalResponseEvent>;
  /** Answers to questions not yet handed to the model (the step has not asked again), by step id. */
  readonly questionAnswers: ReadonlyMap<string, ApprovalResponseEvent>;
  /** Every request id ever journaled, with its step: to tell a stale id from an unknown one. */
  readonly requests: ReadonlyMap<string, string>;
}

/**
 * Reads a journal's approvals and questions: which still wait for a person, and which answers a
 * resume has yet to apply. A request is settled by its `approval-decision`; an answer is applied
 * when the next decision for its step is journaled; a question's answer stands until the step asks again.
 * Shared with @stepwise/dashboard; not part of the public API.
 * @internal
 */
export function approvalState(events: readonly RunEvent[]): ApprovalState {
  const pending = new Map<string, PendingApproval>();
  const answers = new Map<string, ApprovalResponseEvent>();
  const questionAnswers = new Map<string, ApprovalResponseEvent>();
  const requests = new Map<string, string>();
  for (const event of events) {
    if (event.type === 'approval-request') {
      requests.set(event.executionId, event.stepId);
      pending.set(event.stepId, {
        kind: 'approval',
        runId: event.runId,
        requestId: event.executionId,
        stepId: event.stepId,
        tool: event.tool,
        effect: event.effect,
        args: event.args,
        reason: event.reason,
        at: event.at,
      });
    } else if (event.type === 'question-ask') {
      requests.set(event.requestId, event.stepId);
      questionAnswers.delete(event.stepId);
      pending.set(event.stepId, {
        kind: 'question',
        runId: event.runId,
        requestId: event.requestId,
        stepId: event.stepId,
        cause: event.cause,
        question: event.question,
        at: event.at,
      });
    } else if (event.type === 'approval-decision') {
      pending.delete(event.stepId);
      answers.delete(event.stepId);
    } else if (event.type === 'approval-response') {
      pending.delete(event.stepId);
      (event.decision === 'answer' ? questionAnswers : answers).set(event.stepId, event);
    }
  }
  return { pending, answers, questionAnswers, requests };
}
