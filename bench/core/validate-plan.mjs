// validatePlan on plans of 25,000 to 200,000 steps, every shape that used to be slow: time, peak
// memory and how time grows. Target for each shape at 200,000 steps: < 1 s and < 300 MB peak RSS,
// and 200k time / 50k time ≤ 4.5 (linear is 4).
//
// Protocol: one child process per shape and size (`node --expose-gc`), so each peak RSS is that
// plan's alone. In the child: build the plan, validate it once (the cold first call, printed, not
// the target), warm up with five calls on a 5,000-step plan of the same shape, then ROUNDS timed
// calls with the tool registry (args checked against the tools' zod schemas, as engines do), each
// after a full `gc()` so no round pays for the garbage of the one before. The median is reported;
// CPU is the process's user + system time over the same call (all threads, GC included), which
// other load on the machine disturbs less than wall time.
//
//   node bench/core/validate-plan.mjs [--sizes 25000,50000,100000,200000] [--shapes a,b] [--rounds 5]
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { validatePlan } from '@stepwise/core';
import { createTestTools } from '@stepwise/core/testing';
import { writeResults } from '../_protocol.mjs';
import { shapes } from './validate-plan-shapes.mjs';

const TARGET_MS = 1000;
const TARGET_MB = 300;
const TARGET_RATIO = 4.5;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const cpuMs = (usage) => (usage.user + usage.system) / 1000;

/** Child process: one shape at one size; JSON on stdout. */
function measure(name, steps, rounds) {
  const plan = shapes[name].build(steps);
  const { registry } = createTestTools();
  globalThis.gc();
  // What the process holds before validating: node, the packages and the plan itself.
  const rssBeforeMb = process.memoryUsage().rss / 1024 / 1024;
  const coldStarted = performance.now();
  validatePlan(plan, { tools: registry });
  const coldMs = performance.now() - coldStarted;
  // V8 needs several calls to optimise the hot loops.
  const small = shapes[name].build(Math.min(steps, 5000));
  for (let round = 0; round < 5; round++) validatePlan(small, { tools: registry });
  const wall = [];
  const cpu = [];
  for (let round = 0; round < rounds; round++) {
    globalThis.gc();
    const cpuStarted = process.cpuUsage();
    const started = performance.now();
    const validation = validatePlan(plan, { tools: registry });
    wall.push(performance.now() - started);
    cpu.push(cpuMs(process.cpuUsage(cpuStarted)));
    if (!validation.ok)
      throw new Error(`${name}: unexpected problems ${JSON.stringify(validation.problems.slice(0, 3))}`);
  }
  // The kernel's high-water mark for this process (validatePlan blocks, so sampling would miss it).
  const peakMb = process.resourceUsage().maxRSS / 1024;
  return { ms: median(wall), cpuMs: median(cpu), coldMs, peakMb, rssBeforeMb };
}

function runChild(name, steps, rounds) {
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', new URL(import.meta.url).pathname, '--child', name, String(steps), String(rounds)],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  if (child.status !== 0) throw new Error(`${name} at ${steps} failed: ${child.stderr}`);
  return JSON.parse(child.stdout);
}

const thousands = (steps) => `${steps / 1000}k`;

function report(sizes, names, rounds) {
  const largest = sizes.at(-1);
  const ratioFrom = sizes.includes(largest / 4) ? largest / 4 : sizes[0];
  console.log(
    `validatePlan with the tool registry (node ${process.version}, load average ${loadavg()[0].toFixed(1)}; median of ${rounds} rounds, gc() before each, one process per shape and size)`,
  );
  console.log(
    `target at ${thousands(largest)}: < ${TARGET_MS} ms, < ${TARGET_MB} MB peak RSS, ${thousands(largest)}/${thousands(ratioFrom)} time ≤ ${TARGET_RATIO}\n`,
  );
  const rows = [];
  let allMet = true;
  for (const name of names) {
    const measured = Object.fromEntries(sizes.map((steps) => [steps, runChild(name, steps, rounds)]));
    const top = measured[largest];
    const ratio = top.ms / measured[ratioFrom].ms;
    const met = top.ms < TARGET_MS && top.peakMb < TARGET_MB && ratio <= TARGET_RATIO;
    allMet &&= met;
    const row = { shape: name };
    for (const steps of sizes) row[`${thousands(steps)} ms`] = measured[steps].ms.toFixed(0);
    for (const steps of sizes) row[`${thousands(steps)} MB`] = measured[steps].peakMb.toFixed(0);
    Object.assign(row, {
      [`${thousands(largest)}/${thousands(ratioFrom)}`]: ratio.toFixed(2),
      [`${thousands(largest)} CPU ms`]: top.cpuMs.toFixed(0),
      [`${thousands(largest)} cold ms`]: top.coldMs.toFixed(0),
      [`${thousands(largest)} MB before`]: top.rssBeforeMb.toFixed(0),
      target: met ? 'met' : 'NOT met',
    });
    rows.push(row);
    console.error(`  measured ${name}`);
  }
  console.table(rows);
  for (const name of names) console.log(`  ${name.padEnd(16)} ${shapes[name].what}`);
  console.log(
    '  ms: wall-clock median; MB: peak RSS of the process (node, the plan and validation); MB before: RSS with the plan built, before validating\n  CPU ms: median user + system time of the same calls (all threads, GC included); cold: the very first call in the process, before the warm-up',
  );
  console.log(`\nall shapes within target: ${allMet ? 'yes' : 'NO'} (load average now ${loadavg()[0].toFixed(1)})`);
  const what = Object.fromEntries(names.map((name) => [name, shapes[name].what]));
  writeResults('validate-plan', { sizes, rounds, rows, what, allMet });
}

if (process.argv[2] === '--child') {
  const [name, steps, rounds] = process.argv.slice(3);
  process.stdout.write(JSON.stringify(measure(name, Number(steps), Number(rounds))));
} else {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '25000,50000,100000,200000' },
      shapes: { type: 'string', default: Object.keys(shapes).join(',') },
      rounds: { type: 'string', default: '5' },
    },
  });
  const names = values.shapes.split(',');
  for (const name of names)
    if (!shapes[name]) throw new Error(`unknown shape "${name}" (${Object.keys(shapes).join(', ')})`);
  report(values.sizes.split(',').map(Number), names, Number(values.rounds));
}
