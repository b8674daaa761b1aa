// Durability and robustness figures, measured on the real packages:
//   1. SIGKILL storms on the SQLite store with each engine: a host runs a 12-step plan of
//      non-idempotent steps and is killed at a random moment, then resumed (and killed again)
//      until the run ends. Counted: acknowledged events missing from the journal afterwards,
//      non-idempotent steps started twice, and PRAGMA integrity_check.
//   2. Concurrent resumers: after a kill, 2–4 hosts resume the same run at once; exactly one
//      may journal `run-resume`.
//   3. Fuzzed plans into validatePlan and each engine: no exception other than a typed
//      StepwiseError, no call over 5 s, no prototype pollution.
//   4. Damaged database files and mistyped options: a coded error, and the file unchanged.
// Usage: node crash-and-fuzz.mjs [rounds per engine, default 50] [fuzzed plans, default 2000] [parts]
// where parts is a comma-separated subset of sequential,dag,agentic,fuzz,files (default all).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvePlan, defineTool, MemoryStore, StepwiseError, ToolRegistry, validatePlan } from '@stepwise/core';
import { agenticEngine } from '@stepwise/engine-agentic';
import { dagEngine } from '@stepwise/engine-dag';
import { sequentialEngine } from '@stepwise/engine-sequential';
import { createSqliteStore } from '@stepwise/store-sqlite';
import Database from 'better-sqlite3';
import { z } from 'zod';

const ROUNDS = Number(process.argv[2] ?? 50);
const FUZZED = Number(process.argv[3] ?? 2000);
const HOST = new URL('./_host.mjs', import.meta.url).pathname;
const PARTS = (process.argv[4] ?? 'sequential,dag,agentic,fuzz,files').split(',');
const ENGINES = ['sequential', 'dag', 'agentic'].filter((engine) => PARTS.includes(engine));
const directory = mkdtempSync(join(tmpdir(), 'stepwise-security-bench-'));

let seed = 20_261_123;
function random() {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a host; resolves with the JSON lines it printed and how it ended. Kills it after `killAfterMs` if given. */
function host(args, killAfterMs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [HOST, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timer;
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      // The clock starts at the first acknowledged event, so the kill lands inside the run, not in start-up.
      if (killAfterMs !== undefined && timer === undefined)
        timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .flatMap((line) => {
          try {
            return [JSON.parse(line)];
          } catch {
            return []; // The last line a SIGKILL cut short.
          }
        });
      resolve({ lines, code, signal, stderr });
    });
  });
}

async function storedEvents(databasePath, runId) {
  const store = createSqliteStore({ path: databasePath });
  const events = [];
  for await (const event of store.read(runId)) events.push(event);
  await store.close();
  return events;
}

async function countResumes(databasePath, runId) {
  return (await storedEvents(databasePath, runId)).filter((event) => event.type === 'run-resume').length;
}

function integrity(databasePath) {
  const database = new Database(databasePath, { readonly: true });
  const result = database.pragma('integrity_check', { simple: true });
  database.close();
  return result;
}

async function stormRound(engine, round) {
  const databasePath = join(directory, `${engine}-${round}.db`);
  const ledger = join(directory, `${engine}-${round}.ledger`);
  writeFileSync(ledger, '');
  const acknowledged = [];
  let runId;
  let resumeRaces = 0;
  let racesWithOneWinner = 0;
  const outcome = await host(['run', engine, databasePath, ledger, '', '12'], Math.floor(random() * 200));
  acknowledged.push(...outcome.lines.filter((line) => line.seq !== undefined));
  runId = acknowledged[0]?.runId;
  let done = outcome.lines.some((line) => line.done);
  for (let cycle = 0; !done && runId && cycle < 40; cycle++) {
    await sleep(450); // the killed host's lease (400 ms) expires
    const concurrent = cycle === 0 ? 2 + (round % 3) : 1;
    const kill = cycle > 0 && cycle < 4 && random() < 0.6 ? Math.floor(random() * 150) : undefined;
    // Resumers that lose see the winner's events replayed, so the journal is the judge: one race, one `run-resume`.
    const resumesBefore = concurrent > 1 ? await countResumes(databasePath, runId) : 0;
    const outcomes = await Promise.all(
      Array.from({ length: concurrent }, () => host(['resume', engine, databasePath, ledger, runId], kill)),
    );
    for (const each of outcomes) acknowledged.push(...each.lines.filter((line) => line.seq !== undefined));
    if (concurrent > 1 && kill === undefined) {
      resumeRaces++;
      if ((await countResumes(databasePath, runId)) - resumesBefore === 1) racesWithOneWinner++;
    }
    done = outcomes.some((each) => each.lines.some((line) => line.done));
  }
  if (!runId) return { lost: 0, rerun: 0, integrity: 'no run', finished: false, resumeRaces, racesWithOneWinner };
  const events = await storedEvents(databasePath, runId);
  const stored = new Map(events.map((event) => [event.seq, event.type]));
  const lost = new Set(acknowledged.filter((line) => stored.get(line.seq) !== line.type).map((line) => line.seq)).size;
  const starts = new Map();
  for (const line of readFileSync(ledger, 'utf8').split('\n')) {
    const [kind, label] = line.split(' ');
    if (kind === 'start') starts.set(label, (starts.get(label) ?? 0) + 1);
  }
  const rerun = [...starts.values()].filter((count) => count > 1).length;
  return { lost, rerun, integrity: integrity(databasePath), finished: done, resumeRaces, racesWithOneWinner };
}

async function storms() {
  console.log(`\n1–2. SIGKILL storms on SQLite, ${ROUNDS} rounds per engine (12 non-idempotent steps per run)`);
  console.log(
    'engine      rounds  finished  acked events lost  non-idempotent steps run twice  integrity ok  concurrent resumes (one winner / races)',
  );
  for (const engine of ENGINES) {
    const totals = { finished: 0, lost: 0, rerun: 0, integrity: 0, races: 0, oneWinner: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const result = await stormRound(engine, round);
      totals.finished += result.finished ? 1 : 0;
      totals.lost += result.lost;
      totals.rerun += result.rerun;
      totals.integrity += result.integrity === 'ok' ? 1 : 0;
      totals.races += result.resumeRaces;
      totals.oneWinner += result.racesWithOneWinner;
    }
    console.log(
      `${engine.padEnd(12)}${String(ROUNDS).padStart(6)}${String(totals.finished).padStart(10)}${String(totals.lost).padStart(19)}${String(totals.rerun).padStart(32)}${`${totals.integrity}/${ROUNDS}`.padStart(14)}${`${totals.oneWinner} / ${totals.races}`.padStart(20)}`,
    );
  }
}

// ---------------------------------------------------------------- fuzzing

const fuzzTools = new ToolRegistry([
  defineTool({
    name: 'echo',
    description: 'Returns its input.',
    input: z.object({ text: z.string().optional() }).passthrough(),
    effect: 'read',
    async execute(input) {
      return input;
    },
  }),
]);

const WEIRD = [
  '__proto__',
  'constructor',
  'prototype',
  '',
  'a'.repeat(5000),
  '$ref',
  '$s0',
  '../../etc',
  '\u0000',
  '🙂',
  'toString',
  'hasOwnProperty',
];
function pick(list) {
  return list[Math.floor(random() * list.length)];
}
function weirdValue(depth = 0) {
  const kind = Math.floor(random() * 10);
  if (depth > 4) return pick([null, 1, 'x']);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return pick([0, -1, 1e308, -0, 2 ** 53, 3.5]);
    case 2:
      return pick(WEIRD);
    case 3:
      return random() < 0.5;
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => weirdValue(depth + 1));
    case 5:
      return JSON.parse(
        `{"__proto__": {"polluted": ${JSON.stringify(pick(WEIRD))}}, "constructor": {"prototype": {"polluted": 1}}}`,
      );
    case 6:
      return {
        $ref: pick(['s0', 's1', 'missing', '__proto__']),
        pointer: pick(['/text', '/__proto__/polluted', '', 'no-slash']),
      };
    default: {
      const object = {};
      for (let index = 0; index < 3; index++) object[pick(WEIRD)] = weirdValue(depth + 1);
      return object;
    }
  }
}

/** A valid plan (dependencies only on earlier steps), then 0–3 random mutations of it. */
function fuzzedPlan(index) {
  const count = 1 + Math.floor(random() * 6);
  const plan = {
    id: `fuzz_${index}`,
    steps: Array.from({ length: count }, (_, step) => ({
      id: `s${step}`,
      tool: 'echo',
      args: { text: 'hi' },
      ...(step > 0 && random() < 0.5 ? { dependsOn: [`s${Math.floor(random() * step)}`] } : {}),
    })),
  };
  const mutations = Math.floor(random() * 4);
  for (let mutation = 0; mutation < mutations; mutation++) {
    const step = plan.steps[Math.floor(random() * plan.steps.length)];
    const field = pick(['id', 'tool', 'args', 'dependsOn', 'retry', 'timeoutMs', 'preconditions', pick(WEIRD), 'text']);
    if (field === 'text') step.args = { text: weirdValue() };
    else if (field === 'dependsOn')
      step.dependsOn = [random() < 0.5 ? `s${Math.floor(random() * count)}` : weirdValue()];
    else if (random() < 0.1) delete step[field];
    else step[field] = weirdValue();
  }
  if (random() < 0.03) return weirdValue();
  if (random() < 0.03) plan.steps = weirdValue();
  if (random() < 0.03) plan.id = weirdValue();
  return plan;
}

async function guarded(call, label) {
  let timer;
  const started = performance.now();
  try {
    return await Promise.race([
      (async () => {
        await call();
        return 'ok';
      })(),
      new Promise((resolve) => {
        timer = setTimeout(() => resolve('hang'), 5000);
      }),
    ]);
  } catch (error) {
    return StepwiseError.isInstance(error)
      ? 'typed'
      : `untyped: ${error?.name}: ${String(error?.message).slice(0, 120)}`;
  } finally {
    clearTimeout(timer);
    if (performance.now() - started > 5000)
      console.log(`  ${label} took ${Math.round(performance.now() - started)} ms`);
  }
}

async function fuzz() {
  console.log(`\n3. ${FUZZED} fuzzed plans into validatePlan and each engine (MemoryStore)`);
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).join(',');
  const neverAsked = { name: 'unused', generate: async () => Promise.reject(new Error('no model here')) };
  const targets = {
    // The strict engine needs an approval: approvePlan is part of what a host calls with the plan.
    validatePlan: async (plan) => validatePlan(plan, { tools: fuzzTools }),
    sequential: async (plan) => {
      const engine = sequentialEngine({ tools: fuzzTools, store: new MemoryStore() });
      await engine.run(plan, { authorization: approvePlan(plan, { by: 'fuzz' }) }).result;
    },
    dag: async (plan) => dagEngine({ tools: fuzzTools, store: new MemoryStore() }).run(plan).result,
    agentic: async (plan) =>
      agenticEngine({ tools: fuzzTools, store: new MemoryStore(), model: neverAsked, retry: { retries: 0 } }).run(plan)
        .result,
  };
  console.log('target        plans  completed  typed errors  other exceptions  hangs > 5 s');
  const samples = new Set();
  for (const [name, target] of Object.entries(targets)) {
    const counts = { ok: 0, typed: 0, untyped: 0, hang: 0 };
    // Warm-up (not counted): an engine's first run loads its modules, seconds on a busy machine.
    await guarded(() => target({ id: 'warm', steps: [{ id: 's0', tool: 'echo', args: { text: 'hi' } }] }), 'warm-up');
    seed = 7;
    for (let index = 0; index < FUZZED; index++) {
      const plan = fuzzedPlan(index);
      const outcome = await guarded(() => target(plan), `${name} plan #${index}`);
      if (outcome.startsWith('untyped')) {
        counts.untyped++;
        samples.add(`${name}: ${outcome}`);
      } else counts[outcome]++;
    }
    console.log(
      `${name.padEnd(12)}${String(FUZZED).padStart(7)}${String(counts.ok).padStart(11)}${String(counts.typed).padStart(14)}${String(counts.untyped).padStart(18)}${String(counts.hang).padStart(13)}`,
    );
  }
  for (const sample of [...samples].slice(0, 5)) console.log(`  e.g. ${sample}`);
  const polluted =
    Object.getOwnPropertyNames(Object.prototype).join(',') !== prototypeKeys || {}.polluted !== undefined;
  console.log(`prototype pollution after all runs: ${polluted ? 'YES' : 'none'}`);
}

// ---------------------------------------------------------------- damaged files and options

const sha = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function damaged() {
  console.log('\n4. damaged database files and mistyped options');
  const cases = [];
  const good = join(directory, 'good.db');
  {
    const store = createSqliteStore({ path: good });
    await store.listRuns();
    await store.close();
  }
  const files = {
    'random bytes': () =>
      writeFileSync(
        join(directory, 'random.db'),
        Buffer.from(Array.from({ length: 8192 }, () => Math.floor(random() * 256))),
      ),
    'a JSON file': () => writeFileSync(join(directory, 'json.db'), '{"engine": "dag"}\n'.repeat(300)),
    'truncated database': () => {
      writeFileSync(join(directory, 'truncated.db'), readFileSync(good));
      truncateSync(join(directory, 'truncated.db'), Math.floor(readFileSync(good).length / 2) + 100);
    },
  };
  const names = { 'random bytes': 'random.db', 'a JSON file': 'json.db', 'truncated database': 'truncated.db' };
  for (const [label, make] of Object.entries(files)) {
    make();
    const file = join(directory, names[label]);
    const before = sha(file);
    let code = 'no error';
    try {
      const store = createSqliteStore({ path: file });
      await store.listRuns();
      await store.append('run_x', []);
      await store.close();
    } catch (error) {
      code = StepwiseError.isInstance(error)
        ? `${error.code} ${String(error.message).slice(0, 70)}`
        : `untyped ${error?.message}`;
    }
    cases.push([label, code, sha(file) === before ? 'unchanged' : 'CHANGED']);
  }
  const options = {
    'createSqliteStore({ path: 42 })': () => createSqliteStore({ path: 42 }).listRuns(),
    "dagEngine({ concurrency: 'many' })": () => dagEngine({ tools: fuzzTools, concurrency: 'many' }),
    'dagEngine({ tools: [] })': () => dagEngine({ tools: [] }),
    "sequentialEngine({ leaseTtlMs: '1s' })": () => sequentialEngine({ tools: fuzzTools, leaseTtlMs: '1s' }),
    'agenticEngine({ model: undefined })': () => agenticEngine({ tools: fuzzTools }),
    'agenticEngine({ limits: { maxTurns: -1 } })': () =>
      agenticEngine({ tools: fuzzTools, model: { name: 'm', generate: async () => ({}) }, limits: { maxTurns: -1 } }),
  };
  for (const [label, make] of Object.entries(options)) {
    let code = 'no error';
    try {
      await make();
    } catch (error) {
      code = StepwiseError.isInstance(error)
        ? `${error.code} ${String(error.message).slice(0, 70)}`
        : `untyped ${error?.name}: ${String(error?.message).slice(0, 60)}`;
    }
    cases.push([label, code, '']);
  }
  for (const [label, code, file] of cases) console.log(`${label.padEnd(44)}${code.padEnd(80)}${file}`);
}

try {
  if (ENGINES.length > 0) await storms();
  if (PARTS.includes('fuzz')) await fuzz();
  if (PARTS.includes('files')) await damaged();
} finally {
  rmSync(directory, { recursive: true, force: true });
}
