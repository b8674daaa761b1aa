// validatePlan on 100,000-step plans of every shape that used to be slow: time and peak memory.
// Target for each shape: < 1 s and < 300 MB. Each shape runs in its own process (so its peak RSS
// is its own), three rounds after a warm-up, with and without a tool registry; the best round is
// printed beside the median.
//
//   node bench/core/validate-plan.mjs [steps=100000]
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { validatePlan } from '@stepwise/core';
import { chainPlan, createTestTools, makePlan, randomDagPlan, seededRandom } from '@stepwise/core/testing';

const TARGET_MS = 1000;
const TARGET_MB = 300;
const ROUNDS = 3;

const ref = (id) => ({ $ref: id, pointer: '/value' });

/** Every plan shape, by name: how it is built and why it is here. */
const shapes = {
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
  'far-back chain': {
    what: 'chain, step i references step ⌊i/2⌋ and the first step (ancestors up to 50,000 links back)',
    build(steps) {
      const plan = chainPlan(steps);
      plan.steps.forEach((step, index) => {
        if (index > 1) step.args = { value: [ref(`s${Math.floor(index / 2)}`), ref('s0')] };
      });
      return plan;
    },
  },
  'far-back random': {
    what: 'random DAG, ≤3 deps among the 50 steps before, each step references an ancestor ~40 links back on a random path',
    build(steps) {
      const random = seededRandom(11);
      const dependencies = [];
      const planSteps = [];
      for (let index = 0; index < steps; index++) {
        const own = new Set();
        const count = index === 0 ? 0 : 1 + Math.floor(random() * 3);
        for (let k = 0; k < count; k++) own.add(Math.max(0, index - 1 - Math.floor(random() * 50)));
        dependencies.push([...own]);
        let ancestor = index;
        for (let hop = 0; hop < 40 && dependencies[ancestor].length > 0; hop++) {
          const next = dependencies[ancestor];
          ancestor = next[Math.floor(random() * next.length)];
        }
        planSteps.push({
          id: `s${index}`,
          tool: 'echo',
          ...(own.size > 0 ? { dependsOn: [...own].map((slot) => `s${slot}`) } : {}),
          args: { value: ancestor === index ? index : ref(`s${ancestor}`) },
        });
      }
      return makePlan(planSteps, { id: 'far_back_random' });
    },
  },
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Child process: one shape, warm-up then ROUNDS rounds per mode, JSON on stdout. */
function measureShape(name, steps) {
  const plan = shapes[name].build(steps);
  const { registry } = createTestTools();
  // The first call, cold: what a process that validates one big plan once pays (JIT included).
  const coldStarted = performance.now();
  validatePlan(plan, { tools: registry });
  const coldMs = performance.now() - coldStarted;
  // Warm-up on smaller plans of the same shape: V8 needs several calls to optimise the hot loops.
  const small = shapes[name].build(Math.min(steps, 5000));
  for (let round = 0; round < 5; round++) validatePlan(small, { tools: registry });
  globalThis.gc?.();
  // What the process holds before validating: node, the packages and the plan itself.
  const base = process.memoryUsage().rss;
  const result = {};
  for (const [mode, tools] of [
    ['structure', undefined],
    ['registry', registry],
  ]) {
    const times = [];
    for (let round = 0; round < ROUNDS; round++) {
      globalThis.gc?.();
      const started = performance.now();
      const validation = validatePlan(plan, { tools });
      times.push(performance.now() - started);
      if (!validation.ok)
        throw new Error(`${name}: unexpected problems ${JSON.stringify(validation.problems.slice(0, 3))}`);
    }
    result[mode] = { best: Math.min(...times), median: median(times) };
  }
  // The kernel's high-water mark for this process (validatePlan blocks, so sampling would miss it).
  result.peakMb = process.resourceUsage().maxRSS / 1024;
  result.baseMb = base / 1024 / 1024;
  // The yardstick, timed the same way: reading the plan once (a JSON round trip of its 100,000 steps).
  const reads = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    JSON.parse(JSON.stringify(plan));
    reads.push(performance.now() - started);
  }
  result.readMs = median(reads);
  result.coldMs = coldMs;
  return result;
}

if (process.argv[2] === '--shape') {
  process.stdout.write(JSON.stringify(measureShape(process.argv[3], Number(process.argv[4]))));
} else {
  const steps = Number(process.argv[2] ?? 100_000);
  console.log(
    `validatePlan on ${steps.toLocaleString('en')}-step plans (node ${process.version}, load average ${loadavg()[0].toFixed(1)}; ${ROUNDS} rounds after a warm-up, one process per shape)`,
  );
  console.log(
    `target per shape: < ${TARGET_MS} ms and < ${TARGET_MB} MB peak RSS (with the registry: args checked against zod schemas)\n`,
  );
  const rows = [];
  let allMet = true;
  for (const name of Object.keys(shapes)) {
    const child = spawnSync(
      process.execPath,
      ['--expose-gc', new URL(import.meta.url).pathname, '--shape', name, String(steps)],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      },
    );
    if (child.status !== 0) throw new Error(`${name} failed: ${child.stderr}`);
    const measured = JSON.parse(child.stdout);
    const met = measured.registry.median < TARGET_MS && measured.peakMb < TARGET_MB;
    allMet &&= met;
    rows.push({
      shape: name,
      'structure ms (median)': measured.structure.median.toFixed(0),
      'registry ms (median)': measured.registry.median.toFixed(0),
      'registry ms (best)': measured.registry.best.toFixed(0),
      'first call ms (cold)': measured.coldMs.toFixed(0),
      'peak RSS MB': measured.peakMb.toFixed(0),
      'RSS before MB': measured.baseMb.toFixed(0),
      'ms / target': (measured.registry.median / TARGET_MS).toFixed(2),
      '× JSON round trip': (measured.registry.median / measured.readMs).toFixed(1),
      'MB / target': (measured.peakMb / TARGET_MB).toFixed(2),
      target: met ? 'met' : 'NOT met',
    });
  }
  console.table(rows);
  for (const name of Object.keys(shapes)) console.log(`  ${name.padEnd(16)} ${shapes[name].what}`);
  console.log(
    '  × JSON round trip: validation time over JSON.parse(JSON.stringify(plan)) measured in the same process (a machine-speed yardstick)\n  RSS before: the process with the plan built, before validating (peak RSS includes it)\n  first call: the very first validatePlan in the process, before any warm-up (not the target: the medians are)',
  );
  console.log(`\nall shapes within target: ${allMet ? 'yes' : 'NO'} (load average now ${loadavg()[0].toFixed(1)})`);
}
