import type { RunStatus } from '../journal/events.js';
import { diffPlans } from '../plan/plan-diff.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan, Step } from '../plan/plan-schema.js';
import { type JournalSimulation, STEP_IDS } from './journal-simulation.js';
import { chance, pick, randomText, randomUsage } from './random-values.js';

/** A revision of the steps that have not started: one removed, one added, one edited. */
export function revisePlan(simulation: JournalSimulation): void {
  const untouched = (step: Step) => (simulation.steps.get(step.id)?.attempt ?? 0) === 0;
  let steps = [...simulation.plan.steps];
  if (chance(simulation.draw, 50)) {
    const removable = steps.filter(untouched);
    if (removable.length > 0) steps = steps.filter((step) => step !== pick(simulation.draw, removable));
  }
  const free = STEP_IDS.filter((id) => !steps.some((step) => step.id === id));
  if (free.length > 0 && chance(simulation.draw, 60)) steps.push(simulation.randomStep(pick(simulation.draw, free)));
  const editable = steps.filter(untouched);
  if (editable.length > 0 && chance(simulation.draw, 50)) {
    const edited = pick(simulation.draw, editable);
    steps = steps.map((step) => (step === edited ? simulation.randomStep(step.id) : step));
  }
  const plan: Plan = { ...simulation.plan, revision: (simulation.plan.revision ?? 0) + 1, steps };
  const digest = planDigest(plan);
  simulation.emit({
    type: 'plan-revise',
    revision: plan.revision as number,
    parentDigest: simulation.digest,
    digest,
    diff: diffPlans(simulation.plan, plan),
    plan,
    by: pick(simulation.draw, ['adjust:model', 'ops']),
    ...(chance(simulation.draw, 30) ? { reason: randomText(simulation.draw, 3) } : {}),
    ...(chance(simulation.draw, 20) ? { authorization: { ...simulation.authorization(), planDigest: digest } } : {}),
  });
  simulation.plan = plan;
  simulation.digest = digest;
  for (const step of plan.steps) {
    const simulated = simulation.simulated(step.id, step.tool);
    if (simulated.attempt === 0) simulated.tool = step.tool;
  }
}

/** The process died and another resumed the run: the steps in flight are rerun, failed or finished. */
export function resumeRun(simulation: JournalSimulation): void {
  const inFlight = [...simulation.steps.values()].filter((step) => step.phase !== 'idle');
  if (chance(simulation.draw, 20)) {
    // What resume did with the process groups crashed calls had left.
    simulation.emit({
      type: 'process-kill',
      killed: [simulation.draw(2, 60000)],
      left: chance(simulation.draw, 50) ? [{ pid: 4242, processGroup: 4242, reason: 'not-leader' }] : [],
    });
  }
  simulation.emit({
    type: 'run-resume',
    owner: `host_${simulation.draw(0, 3)}`,
    interrupted: inFlight.map((step) => ({
      stepId: step.id,
      action: pick(simulation.draw, ['rerun', 'fail', 'finish']),
    })),
    ...(chance(simulation.draw, 10) ? { authorization: simulation.authorization() } : {}),
  });
  for (const step of inFlight) if (chance(simulation.draw, 50)) simulation.endStep(step, 'failed');
}

export function endRun(simulation: JournalSimulation): void {
  const status = pick(simulation.draw, ['completed', 'failed', 'partial', 'cancelled', 'waiting'] as const);
  for (const step of simulation.steps.values()) if (step.phase !== 'idle') simulation.endStep(step, 'cancelled');
  const usage = randomUsage(simulation.draw);
  simulation.emit({
    type: 'run-end',
    status,
    durationMs: simulation.draw(0, 100000),
    ...(usage ? { usage } : {}),
    ...(simulation.plan.revision ? { revision: simulation.plan.revision } : {}),
  });
  simulation.ended = status;
}

/** An ended run: a person answers what it waits on, or it continues (retrying and skipping steps), or it resumes. */
export function afterEnd(simulation: JournalSimulation): void {
  const answerable = [...simulation.waiting.entries()];
  if (answerable.length > 0 && chance(simulation.draw, 50)) {
    const [requestId, request] = pick(simulation.draw, answerable);
    simulation.waiting.delete(requestId);
    simulation.emit({
      type: 'approval-response',
      stepId: request.stepId,
      requestId,
      decision: request.question ? 'answer' : pick(simulation.draw, ['approve', 'deny', 'skip', 'edit']),
      ...(request.question ? { answer: randomText(simulation.draw, 4) } : {}),
      by: 'person',
    });
    return;
  }
  const ids = [...simulation.steps.keys()];
  const from = simulation.ended as RunStatus;
  simulation.ended = undefined;
  if (chance(simulation.draw, 20)) {
    resumeRun(simulation);
    return;
  }
  simulation.emit({
    type: 'run-continue',
    from,
    retry: ids.filter(() => chance(simulation.draw, 30)),
    skip: ids.filter(() => chance(simulation.draw, 15)),
    ...(chance(simulation.draw, 50) ? { by: 'ops', reason: randomText(simulation.draw, 3) } : {}),
  });
}
