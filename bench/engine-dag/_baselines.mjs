// Reference points measured in the same run, so the engine's numbers can be read against what the
// machine and the core kernel allow by themselves.
import { finishRun, invokeStep, startRun } from '@stepwise/core/engine';

/** Dependents by step id, and dependency counts. */
function graphOf(plan) {
  const dependents = new Map(plan.steps.map((step) => [step.id, []]));
  const remaining = new Map();
  for (const step of plan.steps) {
    remaining.set(step.id, (step.dependsOn ?? []).length);
    for (const dependency of step.dependsOn ?? []) dependents.get(dependency).push(step.id);
  }
  return { dependents, remaining };
}

/**
 * The timer floor: the DAG executed eagerly with bare `setTimeout`s, no kernel, no journal.
 * Its makespan / critical path is what this machine's event loop and timers allow at best.
 */
export function timerFloor(plan, durations) {
  const { dependents, remaining } = graphOf(plan);
  return new Promise((resolve) => {
    const started = performance.now();
    let left = plan.steps.length;
    const start = (id) =>
      setTimeout(() => {
        if (--left === 0) resolve(performance.now() - started);
        for (const next of dependents.get(id)) {
          const count = remaining.get(next) - 1;
          remaining.set(next, count);
          if (count === 0) start(next);
        }
      }, durations.get(id));
    for (const step of plan.steps) if (remaining.get(step.id) === 0) start(step.id);
  });
}

/**
 * The core kernel in a minimal eager loop: `startRun`, `invokeStep` per step the moment its
 * dependencies succeeded (no queue, no validation, no failure policy), `finishRun`. The engine's
 * own cost is its time minus this one.
 */
export async function kernelLoop(plan, tools, store, runId) {
  const started = performance.now();
  const journal = await startRun({ store, runId, plan, engine: 'kernel-loop' });
  const { dependents, remaining } = graphOf(plan);
  const byId = new Map(plan.steps.map((step) => [step.id, step]));
  const outputs = new Map();
  const results = [];
  const context = { runId, journal, registry: tools };
  await new Promise((resolve, reject) => {
    let left = plan.steps.length;
    const run = async (id) => {
      const result = await invokeStep(byId.get(id), { attempt: 1, references: 'resolve', outputs }, context);
      outputs.set(id, result.output);
      results.push(result);
      if (--left === 0) resolve();
      for (const next of dependents.get(id)) {
        const count = remaining.get(next) - 1;
        remaining.set(next, count);
        if (count === 0) run(next).catch(reject);
      }
    };
    for (const step of plan.steps) if (remaining.get(step.id) === 0) run(step.id).catch(reject);
  });
  await finishRun(journal, {
    plan,
    engine: 'kernel-loop',
    status: 'completed',
    steps: results,
    durationMs: performance.now() - started,
  });
  return performance.now() - started;
}
