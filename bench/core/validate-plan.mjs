// validatePlan on a 100,000-step random DAG: time and peak memory. Target: < 1 s and < 300 MB.
import { ToolRegistry, validatePlan } from '@stepwise/core';
import { createTestTools, randomDagPlan } from '@stepwise/core/testing';

const steps = Number(process.env.STEPS ?? 100_000);
const plan = randomDagPlan(steps, { seed: 7, maxDependencies: 3 });
// Half the steps reference an earlier dependency's output: the reference check is exercised too.
for (const step of plan.steps) {
  if (step.dependsOn?.length && Number(step.id.slice(1)) % 2 === 0) {
    step.args = { value: { $ref: step.dependsOn[0], pointer: '/value' } };
  }
}
const { registry } = createTestTools();
const runs = [];
let peak = 0;
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 5);
for (const tools of [undefined, registry]) {
  for (let round = 0; round < 3; round++) {
    globalThis.gc?.();
    const started = performance.now();
    const result = validatePlan(plan, { tools });
    const ms = performance.now() - started;
    peak = Math.max(peak, process.memoryUsage().rss);
    if (!result.ok) throw new Error(`unexpected problems: ${JSON.stringify(result.problems.slice(0, 3))}`);
    runs.push({ tools: tools ? 'with registry' : 'structure only', ms });
  }
}
clearInterval(sampler);
const best = (label) => Math.min(...runs.filter((run) => run.tools === label).map((run) => run.ms));
console.log(`validatePlan, ${steps.toLocaleString()} steps (random DAG, ≤3 deps, half with references)`);
console.log(`  structure only : ${best('structure only').toFixed(0)} ms (best of 3)`);
console.log(`  with registry  : ${best('with registry').toFixed(0)} ms (best of 3; args checked against zod schemas)`);
console.log(`  peak RSS       : ${(peak / 1024 / 1024).toFixed(0)} MB`);
console.log(
  `  target         : < 1000 ms and < 300 MB → ${best('with registry') < 1000 && peak < 300 * 1024 * 1024 ? 'met' : 'NOT met'}`,
);
void ToolRegistry;
