import type { Plan } from '../plan/plan-schema.js';
import type { FoldChanges } from './fold-changes.js';
import type { FoldedRun, StepState } from './fold-run.js';

/** The step an event changes, added to the run (pending) when the run does not have it yet. */
export function stepOf(run: FoldedRun, stepId: string, changes: FoldChanges | undefined): StepState {
  let step = run.steps.get(stepId);
  if (step) {
    changes?.step(stepId);
    return step;
  }
  step = {
    stepId,
    status: 'pending',
    attempt: 0,
    tool: undefined,
    executionId: undefined,
    startedAt: undefined,
    endedAt: undefined,
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
  changes?.step(stepId, true);
  return step;
}

/**
 * The plan's steps join the run, in plan order (the first step with an id counts; later duplicates
 * change nothing). A step that has not started takes the plan's tool: a revision may change it.
 */
export function addPlanSteps(run: FoldedRun, plan: Plan, changes: FoldChanges | undefined): void {
  // The ids met so far, kept only from the first id the run already has (a revision's steps, or a
  // duplicate): a new run's plan of unique ids needs none, and 100,000 ids in a Set cost 7 MB.
  let seen: Set<string> | undefined;
  const steps = plan.steps;
  for (let index = 0; index < steps.length; index++) {
    const planStep = steps[index] as Plan['steps'][number];
    if (seen === undefined && run.steps.has(planStep.id)) {
      seen = new Set<string>();
      for (let before = 0; before < index; before++) seen.add((steps[before] as Plan['steps'][number]).id);
    }
    if (seen !== undefined) {
      if (seen.has(planStep.id)) continue;
      seen.add(planStep.id);
    }
    const step = stepOf(run, planStep.id, changes);
    if (step.status === 'pending') step.tool = planStep.tool;
  }
}
