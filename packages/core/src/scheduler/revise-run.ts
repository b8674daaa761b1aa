import { ErrorCodes, StepwiseError } from '../errors.js';
import { planReviseEvent } from '../journal/apply-plan-revise.js';
import type { PlanReviseEvent } from '../journal/events.js';
import { verifyAuthorization } from '../plan/plan-digest.js';
import { type PlanRevision, replaceRemainingSteps, revisePlan } from '../plan/plan-revision.js';
import type { RevisionRequest } from './engine-policy.js';
import type { RunScheduler } from './run-scheduler.js';
import { type Slot, StepBoard } from './step-board.js';

/** A revision checked against the live run, not yet journaled. */
export interface PreparedRevision {
  readonly revision: PlanRevision;
  readonly request: RevisionRequest;
  /** A started step whose dependencies the revision may change (steps inserted before its retry). */
  readonly reopened: Slot | undefined;
}

function checkRequest(request: RevisionRequest): void {
  const bad = (message: string, location: string) =>
    new StepwiseError(ErrorCodes.INPUT_INVALID, `revision: ${message}`, { location });
  if (typeof request !== 'object' || request === null) throw bad('expected { edits } or { remaining }', '/');
  const { edits, remaining } = request;
  if ((edits === undefined) === (remaining === undefined)) throw bad('give either "edits" or "remaining"', '/');
  if (edits !== undefined && !Array.isArray(edits)) throw bad('"edits" must be an array', '/edits');
  if (remaining !== undefined && !Array.isArray(remaining)) throw bad('"remaining" must be an array', '/remaining');
  (edits ?? []).forEach((edit: unknown, index) => {
    if (typeof edit !== 'object' || edit === null) throw bad(`edit ${index} is not an object`, `/edits/${index}`);
  });
}

/**
 * Builds the next revision of the run's current plan: started steps may not be touched (E005), the
 * result is validated under the engine's rules and tools (E001), and an authorization given with
 * it must be for the revised digest (E002 / E003). Pure: nothing is journaled or changed.
 */
export function prepareRevision(scheduler: RunScheduler, request: RevisionRequest, reopened?: Slot): PreparedRevision {
  checkRequest(request);
  const { board, policy } = scheduler;
  const started = board.slots
    .filter((slot) => slot !== reopened && StepBoard.started(slot))
    .map((slot) => slot.step.id);
  const options = {
    started,
    tools: scheduler.registry,
    engine: policy.validation,
    goalSteps: policy.goalSteps !== undefined,
    ...(scheduler.planDigest ? { parentDigest: scheduler.planDigest } : {}),
  };
  const revision = request.remaining
    ? replaceRemainingSteps(board.plan, request.remaining, options)
    : revisePlan(board.plan, request.edits ?? [], options);
  if (request.authorization) verifyAuthorization(revision.plan, request.authorization);
  return { revision, request, reopened };
}

/**
 * Journals `plan-revise` (durable before anything runs on the new plan), moves the board and the
 * graph to it, and applies the policy's approval rule: without an approval of the new digest a
 * strict run holds (ends `waiting`) or fails.
 */
export async function commitRevision(scheduler: RunScheduler, prepared: PreparedRevision): Promise<PlanRevision> {
  const { revision, request, reopened } = prepared;
  const event = planReviseEvent(revision, request.by ?? 'host', request.reason);
  const recorded = await scheduler.journal.record(
    request.authorization ? { ...event, authorization: request.authorization } : event,
  );
  scheduler.adopt(revision, recorded as PlanReviseEvent, reopened);
  const rule = scheduler.policy.revisionApproval;
  if (rule && !request.authorization) {
    const reason = `revision ${revision.revision} of the plan (digest ${revision.digest.slice(0, 12)}…) is not approved`;
    if (rule === 'wait') scheduler.hold(reason);
    else scheduler.stop('failed', reason);
  }
  return revision;
}
