import type { PendingApproval, RunEvent } from '@stepwise/core';
import { approvalState, type FoldedRun } from '@stepwise/core/store';

/**
 * The requests a waiting run waits on: those of its steps that ended `waiting` (what core's
 * `pendingApprovals` answers, from events already read).
 */
export function waitingRequests(events: readonly RunEvent[], run: FoldedRun): PendingApproval[] {
  if (run.status !== 'waiting') return [];
  return [...approvalState(events).pending.values()].filter(
    (request) => run.steps.get(request.stepId)?.status === 'waiting',
  );
}

/** A strict run whose plan was revised without an approval waits for one (`approvePlan` of its plan now). */
export function needsPlanApproval(run: FoldedRun): boolean {
  return run.status === 'waiting' && run.revisions.length > 0 && run.authorization?.planDigest !== run.planDigest;
}

/** What a waiting run waits on, in a few words per request; empty for a run that is not waiting. */
export function describeWaitingOn(events: readonly RunEvent[], run: FoldedRun): string[] {
  if (run.status !== 'waiting') return [];
  const requests = waitingRequests(events, run).map((request) =>
    request.kind === 'question'
      ? `answer to ${request.stepId}'s question`
      : `approval of ${request.tool} (${request.effect}) at ${request.stepId}`,
  );
  if (needsPlanApproval(run)) requests.push('approval of the revised plan');
  return requests.length > 0 ? requests : ['a resume (its questions are answered)'];
}
