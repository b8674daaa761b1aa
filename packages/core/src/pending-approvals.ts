import type { ApprovalRequestEvent, ApprovalResponseEvent, RunEvent } from './events.js';

/** An approval request of a waiting run that no one has answered yet. */
export interface PendingApproval {
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

export interface ApprovalState {
  /** Requests without a decision or an answer, by step id. */
  readonly pending: ReadonlyMap<string, PendingApproval>;
  /** Answers not yet applied by a resumed run, by step id. */
  readonly answers: ReadonlyMap<string, ApprovalResponseEvent>;
  /** Every request id ever journaled, with its step: to tell a stale id from an unknown one. */
  readonly requests: ReadonlyMap<string, string>;
}

/**
 * Reads a journal's approvals: which requests still wait for a person, and which answers a resume
 * has yet to apply. A request is settled by its `approval-decision`; an answer is applied when the
 * next decision for its step is journaled.
 */
export function approvalState(events: readonly RunEvent[]): ApprovalState {
  const pending = new Map<string, PendingApproval>();
  const answers = new Map<string, ApprovalResponseEvent>();
  const requests = new Map<string, string>();
  for (const event of events) {
    if (event.type === 'approval-request') {
      requests.set(event.executionId, event.stepId);
      pending.set(event.stepId, {
        runId: event.runId,
        requestId: event.executionId,
        stepId: event.stepId,
        tool: event.tool,
        effect: event.effect,
        args: event.args,
        reason: event.reason,
        at: event.at,
      });
    } else if (event.type === 'approval-decision') {
      pending.delete(event.stepId);
      answers.delete(event.stepId);
    } else if (event.type === 'approval-response') {
      pending.delete(event.stepId);
      answers.set(event.stepId, event);
    }
  }
  return { pending, answers, requests };
}
