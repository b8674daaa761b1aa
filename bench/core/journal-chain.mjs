// What the journal's hash chain costs: CPU µs per event of linking an event (canonical JSON and one
// SHA-256, or HMAC-SHA-256 with a journal key) next to the JSON.stringify every store pays anyway, on
// the events of a real no-op run; then CPU µs per no-op step through the dag engine on MemoryStore,
// without and with a journal key, for a chain and a 1 → N → 1 fan-out. Rounds interleaved, median.
// CPU time (user + system of this process) is what other load on the machine disturbs least, but a
// loaded 2-core machine still moves the per-step figures by ±20 %: compare the per-event ones first.
//
//   node --expose-gc bench/core/journal-chain.mjs [steps = 1000]
import * as crypto from 'node:crypto';
import { loadavg } from 'node:os';
import * as core from '@stepwise/core';
import { canonicalJson } from '@stepwise/core/engine';
import { chainPlan, makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { noopTools } from '../_workloads.mjs';

const STEPS = Number(process.argv[2] ?? 1000);
const KEY = 'a journal key for the benchmark, 32+';
const tools = noopTools({ core });
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const cpu = (start) => {
  const used = process.cpuUsage(start);
  return used.user + used.system;
};

/** The events of a 100-step no-op run, without their chain values. */
async function sampleEvents() {
  const store = new core.MemoryStore();
  const { runId } = await dagEngine({ tools, store }).run(chainPlan(100, 'noop')).result;
  return { runId, events: (await core.readAll(store, runId)).slice(1, -1).map(({ chain: _chain, ...event }) => event) };
}

async function perEvent() {
  const { runId, events } = await sampleEvents();
  const key = crypto.createSecretKey(Buffer.from(KEY));
  let previous = runId;
  const variants = {
    'JSON.stringify (what a store pays)': (event) => JSON.stringify(event),
    'canonical JSON': (event) => canonicalJson(event),
    'link: canonical JSON + SHA-256': (event) => {
      // As RunJournal does: the one-shot `crypto.hash` where Node has it (20.12+).
      const text = `${previous}\n${canonicalJson(event)}`;
      previous = crypto.hash
        ? crypto.hash('sha256', text, 'base64url')
        : crypto.createHash('sha256').update(text).digest('base64url');
    },
    'link: canonical JSON + HMAC-SHA-256': (event) => {
      previous = crypto
        .createHmac('sha256', key)
        .update(`${previous}\n${canonicalJson(event)}`)
        .digest('base64url');
    },
  };
  const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
  const count = 20_000;
  for (let round = 0; round < 24; round++) {
    for (const [name, link] of Object.entries(variants)) {
      const start = process.cpuUsage();
      for (let index = 0; index < count; index++) link(events[index % events.length]);
      if (round >= 3) samples[name].push(cpu(start) / count);
    }
  }
  return Object.entries(samples).map(([what, values]) => ({ what, 'CPU µs/event': median(values).toFixed(2) }));
}

function fanOut(steps) {
  const middle = Array.from({ length: steps - 2 }, (_, index) => ({
    id: `m${index}`,
    tool: 'noop',
    dependsOn: ['root'],
  }));
  return makePlan([
    { id: 'root', tool: 'noop' },
    ...middle,
    { id: 'join', tool: 'noop', dependsOn: middle.map((step) => step.id) },
  ]);
}

async function perStep() {
  const shapes = { chain: chainPlan(STEPS, 'noop'), 'fan-out': fanOut(STEPS) };
  const rows = [];
  for (const [shape, plan] of Object.entries(shapes)) {
    const samples = { unkeyed: [], keyed: [] };
    for (let round = 0; round < 13; round++) {
      for (const keyed of round % 2 ? [true, false] : [false, true]) {
        const engine = dagEngine({
          tools,
          store: new core.MemoryStore(),
          concurrency: 16,
          ...(keyed ? { journalKey: KEY } : {}),
        });
        globalThis.gc?.();
        const start = process.cpuUsage();
        await engine.run(plan).result;
        if (round >= 2) samples[keyed ? 'keyed' : 'unkeyed'].push(cpu(start) / STEPS);
      }
    }
    const unkeyed = median(samples.unkeyed);
    const keyed = median(samples.keyed);
    rows.push({
      shape,
      steps: STEPS,
      'unkeyed µs/step': unkeyed.toFixed(1),
      'keyed µs/step': keyed.toFixed(1),
      'keyed / unkeyed': (keyed / unkeyed).toFixed(3),
    });
  }
  return rows;
}

console.log(`the journal's hash chain (node ${process.version}, load average ${loadavg()[0].toFixed(1)})`);
console.table(await perEvent());
console.table(await perStep());
