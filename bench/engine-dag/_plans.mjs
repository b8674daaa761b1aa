// Shared by the dag-engine benchmark: the random DAG, its skewed durations and its critical path.
import { randomDagPlan, seededRandom } from '@stepwise/core/testing';

/**
 * A random DAG of `steps` steps (each depends on up to 3 earlier ones) whose steps sleep for a
 * skewed duration: 85 % short (2–10 ms), 15 % long (40–160 ms). Returns the plan for the `sleep`
 * tool plus each step's duration, by id.
 */
export function skewedDag(steps, seed = 42) {
  const base = randomDagPlan(steps, { seed, maxDependencies: 3 });
  const random = seededRandom(seed * 7919);
  const durations = new Map();
  const plan = {
    ...base,
    id: `skewed_${steps}`,
    steps: base.steps.map((step) => {
      const long = random() < 0.15;
      const ms = long ? 40 + Math.floor(random() * 121) : 2 + Math.floor(random() * 9);
      durations.set(step.id, ms);
      return { ...step, tool: 'sleep', args: { ms } };
    }),
  };
  return { plan, durations };
}

/** The same DAG shape with a no-op tool. */
export function noopDag(steps, seed = 42) {
  const base = randomDagPlan(steps, { seed, maxDependencies: 3 });
  return { ...base, id: `noop_${steps}`, steps: base.steps.map((step) => ({ ...step, tool: 'noop', args: {} })) };
}

/** Longest path through the DAG by duration (dependencies always precede their dependents here). */
export function criticalPath(plan, durations) {
  const finish = new Map();
  for (const step of plan.steps) {
    const ready = Math.max(0, ...(step.dependsOn ?? []).map((dependency) => finish.get(dependency)));
    finish.set(step.id, ready + durations.get(step.id));
  }
  return Math.max(...finish.values());
}

/** Depth in steps of the DAG (the number of LangGraph supersteps it needs at least). */
export function depth(plan) {
  const level = new Map();
  for (const step of plan.steps) {
    level.set(step.id, 1 + Math.max(0, ...(step.dependsOn ?? []).map((dependency) => level.get(dependency))));
  }
  return Math.max(...level.values());
}

/**
 * A DAG of `levels` levels of `width` steps each; every step depends on 1–3 steps of the level
 * before, and sleeps the same skewed durations as `skewedDag`. Unlike the random DAG (whose
 * depth and level sizes vary), every level is equally wide.
 */
export function uniformDag(levels, width, seed = 42) {
  const random = seededRandom(seed);
  const durations = new Map();
  const steps = [];
  for (let level = 0; level < levels; level++) {
    for (let index = 0; index < width; index++) {
      const id = `l${level}_${index}`;
      const dependsOn = new Set();
      if (level > 0) {
        const count = 1 + Math.floor(random() * 3);
        for (let k = 0; k < count; k++) dependsOn.add(`l${level - 1}_${Math.floor(random() * width)}`);
      }
      const long = random() < 0.15;
      const ms = long ? 40 + Math.floor(random() * 121) : 2 + Math.floor(random() * 9);
      durations.set(id, ms);
      steps.push({ id, tool: 'sleep', args: { ms }, ...(dependsOn.size > 0 ? { dependsOn: [...dependsOn] } : {}) });
    }
  }
  return { plan: { id: `uniform_${levels}x${width}`, version: 1, goal: 'bench', steps }, durations };
}
