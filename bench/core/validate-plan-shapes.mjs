// The plan shapes bench/core/validate-plan.mjs validates: each one was slow, or is the common case.
import { chainPlan, makePlan, randomDagPlan, seededRandom } from '@stepwise/core/testing';

const ref = (id, pointer = '/value') => ({ $ref: id, pointer });

/** A plan from dependency lists and one reference (or none) per step. */
function planOf(id, dependencies, referenceOf) {
  return makePlan(
    dependencies.map((own, index) => ({
      id: `s${index}`,
      tool: 'echo',
      ...(own.length > 0 ? { dependsOn: own.map((slot) => `s${slot}`) } : {}),
      args: { value: referenceOf(index) ?? index },
    })),
    { id },
  );
}

/** The step `hops` random dependency links back from `index` (fewer where the graph ends). */
function walkBack(dependencies, index, hops, random) {
  let ancestor = index;
  for (let hop = 0; hop < hops && dependencies[ancestor].length > 0; hop++) {
    const own = dependencies[ancestor];
    ancestor = own[Math.floor(random() * own.length)];
  }
  return ancestor;
}

/** 1–3 dependencies per step, each on any earlier step (`window` Infinity) or among the `window` before. */
function randomDependencies(steps, random, window = Number.POSITIVE_INFINITY) {
  return Array.from({ length: steps }, (_, index) => {
    if (index === 0) return [];
    const own = new Set();
    const count = 1 + Math.floor(random() * 3);
    for (let k = 0; k < count; k++) own.add(index - 1 - Math.floor(random() * Math.min(window, index)));
    return [...own];
  });
}

export const shapes = {
  random: {
    what: 'random DAG, ≤3 deps on any earlier step, half the steps reference their first dependency',
    build(steps) {
      const plan = randomDagPlan(steps, { seed: 7, maxDependencies: 3 });
      for (const step of plan.steps) {
        if (step.dependsOn?.length && Number(step.id.slice(1)) % 2 === 0) step.args = { value: ref(step.dependsOn[0]) };
      }
      return plan;
    },
  },
  chain: {
    what: 'chain, each step references the one before',
    build(steps) {
      const plan = chainPlan(steps);
      for (const step of plan.steps) if (step.dependsOn?.length) step.args = { value: ref(step.dependsOn[0]) };
      return plan;
    },
  },
  'fan-out': {
    what: '1 → N → 1: one root, N-2 parallel steps, one join step depending on (and referencing) all of them',
    build(steps) {
      const middle = Array.from({ length: steps - 2 }, (_, index) => ({
        id: `m${index}`,
        tool: 'echo',
        dependsOn: ['root'],
        args: { value: ref('root') },
      }));
      const join = {
        id: 'join',
        tool: 'echo',
        dependsOn: middle.map((step) => step.id),
        args: { value: middle.map((step) => ref(step.id)) },
      };
      return makePlan([{ id: 'root', tool: 'echo', args: { value: 0 } }, ...middle, join], { id: 'fan_out' });
    },
  },
  'far-back-chain': {
    what: 'chain, step i references step ⌊i/2⌋ and the first step (ancestors up to N/2 links back)',
    build(steps) {
      const plan = chainPlan(steps);
      plan.steps.forEach((step, index) => {
        if (index > 1) step.args = { value: [ref(`s${Math.floor(index / 2)}`), ref('s0')] };
      });
      return plan;
    },
  },
  'far-back-random': {
    what: 'random DAG, 1–3 deps among the 50 steps before, each step references an ancestor 40 links back on a random path',
    build(steps) {
      const random = seededRandom(11);
      const dependencies = randomDependencies(steps, random, 50);
      return planOf('far_back_random', dependencies, (index) => {
        const ancestor = walkBack(dependencies, index, 40, random);
        return ancestor === index ? undefined : ref(`s${ancestor}`);
      });
    },
  },
  'multi-hop': {
    what: 'random DAG, 1–3 deps on any earlier step, each step references an ancestor 2–8 random links back',
    build(steps) {
      const random = seededRandom(3);
      const dependencies = randomDependencies(steps, random);
      return planOf('multi_hop', dependencies, (index) => {
        const ancestor = walkBack(dependencies, index, 2 + Math.floor(random() * 7), random);
        return ancestor === index ? undefined : ref(`s${ancestor}`);
      });
    },
  },
  interleaved: {
    what: '16 chains round-robin, a quarter of the steps also depend on another chain; each references a random earlier step of its chain',
    build(steps) {
      const chains = 16;
      const random = seededRandom(5);
      const dependencies = Array.from({ length: steps }, (_, index) => {
        const own = index >= chains ? [index - chains] : [];
        // Listed second: a step of another chain, from the round before.
        if (index >= 2 * chains && random() < 0.25) own.push(index - chains - 1 - Math.floor(random() * (chains - 1)));
        return own;
      });
      return planOf('interleaved', dependencies, (index) => {
        const round = Math.floor(index / chains);
        return round === 0 ? undefined : ref(`s${(index % chains) + chains * Math.floor(random() * round)}`);
      });
    },
  },
  'deep-pointers': {
    what: 'random DAG as multi-hop; each reference 1–4 links back sits 6 levels deep in args, with a 32-segment pointer of its own (`/5/a/0/a/0…/v`), object and string forms alternating',
    build(steps) {
      const random = seededRandom(13);
      const dependencies = randomDependencies(steps, random);
      return planOf('deep_pointers', dependencies, (index) => {
        const ancestor = walkBack(dependencies, index, 1 + Math.floor(random() * 4), random);
        if (ancestor === index) return undefined;
        // A pointer per step, as a plan parsed from JSON has: nothing shared between steps.
        const pointer = `/${index % 97}${'/a/0'.repeat(15)}/v`;
        let value = index % 2 === 0 ? ref(`s${ancestor}`, pointer) : `$s${ancestor}${pointer}`;
        for (let level = 0; level < 6; level++) value = level % 2 === 0 ? { [`level${level}`]: value } : [value];
        return value;
      });
    },
  },
};
