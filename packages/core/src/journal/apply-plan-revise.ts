import { ErrorCodes, StepwiseError } from '../errors.js';
import { planDigest } from '../plan/plan-digest.js';
import type { PlanRevision } from '../plan/plan-revision.js';
import type { PlanReviseEvent } from './events.js';
import type { FoldChanges } from './fold-changes.js';
import type { FoldedRun } from './fold-run.js';
import { addPlanSteps } from './fold-steps.js';
import { REDACTED } from './redact.js';

/**
 * Folds a `plan-revise` event: the revision becomes the run's plan. The chain is checked (the
 * revision must name the current digest as its parent, and its plan must hash to its digest
 * unless the redactor masked part of it):
 * a journal that breaks it is not one to resume from (E502). Steps the revision removed before
 * they started leave the run; new steps start `pending`, and steps that have not started take the
 * revision's tool. `changes`, when given, learns which steps changed or left.
 */
export function applyPlanRevise(run: FoldedRun, event: PlanReviseEvent, changes?: FoldChanges): void {
  const location = `${run.runId}#${event.seq}`;
  if (event.parentDigest !== run.planDigest) {
    throw new StepwiseError(
      ErrorCodes.JOURNAL_CONFLICT,
      `revision ${event.revision} of run ${run.runId} names parent ${event.parentDigest.slice(0, 12)}…, but the plan is ${run.planDigest.slice(0, 12)}…`,
      { location },
    );
  }
  // A plan the redactor masked no longer hashes to the digest taken before masking: only the
  // parent chain can be checked then (the digests themselves are never masked).
  if (!JSON.stringify(event.plan).includes(REDACTED) && planDigest(event.plan) !== event.digest) {
    throw new StepwiseError(
      ErrorCodes.JOURNAL_CONFLICT,
      `revision ${event.revision} of run ${run.runId}: the plan does not hash to its digest`,
      { location },
    );
  }
  run.revisions.push(event);
  run.plan = event.plan;
  run.planDigest = event.digest;
  run.goal = event.plan.goal;
  // Without one, the approval of the earlier digest stays: the strict engine refuses it on resume (E003).
  if (event.authorization) run.authorization = event.authorization;
  const current = new Set(event.plan.steps.map((step) => step.id));
  for (const [stepId, step] of run.steps) {
    if (current.has(stepId) || step.status !== 'pending') continue;
    run.steps.delete(stepId);
    changes?.removeStep(stepId);
  }
  addPlanSteps(run, event.plan, changes);
}

/** Ids of the steps that have started (anything but `pending`): what a revision may not touch. */
export function startedStepIds(run: FoldedRun): Set<string> {
  const started = new Set<string>();
  for (const [stepId, step] of run.steps) if (step.status !== 'pending') started.add(stepId);
  return started;
}

/** The `plan-revise` event that journals `revision` (the journal stamps run id, seq and time). */
export function planReviseEvent(
  revision: PlanRevision,
  by: string,
  reason?: string,
): Omit<PlanReviseEvent, 'runId' | 'seq' | 'at'> {
  return {
    type: 'plan-revise',
    revision: revision.revision,
    parentDigest: revision.parentDigest,
    digest: revision.digest,
    diff: revision.diff,
    plan: revision.plan,
    by,
    ...(reason === undefined ? {} : { reason }),
  };
}
