// Engine overhead per step of @stepwise/engine-sequential: a 10,000-step plan of a no-op tool,
// run to completion, on MemoryStore and on the SQLite store (synchronous NORMAL, a real file).
// Overhead = (wall time of the run - time spent inside the tool) / steps. Printed next to the
// same loop written directly against the core kernel (startRun + invokeStep + finishRun), so
// the engine's own share is visible, and next to a replay of the finished run. A diagnostic row
// runs the memory case with a redactor that does nothing (not a supported setting: it shows how
// much of the per-step cost is core's redaction pass over every event). A floor row writes the
// least any SQLite journal with the design's projections must write per step straight through
// better-sqlite3: for this idempotent (`read`) tool the kernel's one durable point per step, one
// IMMEDIATE transaction of the four journal rows plus the step's and the execution's row, with the
// run row and its last seq read for the lease and seq checks, in the store's layout (the journal a
// rowid table keyed by run and seq, no run row written per step) and its checkpoint interval of
// 10,000 WAL pages; beside it the two transactions a non-idempotent tool's step
// needs (before the tool runs, when the step ends). No engine, no kernel, no encoding: what this
// disk and CPU charge for the transactions alone.
// Protocol (bench/README.md): gc() before each timed run, WARM_UP full-size warm-up runs, the median
// of the rounds, wall and CPU time, the load average printed; what it prints is written to
// bench/results/overhead.json.
//
//   node bench/engine-sequential/overhead.mjs [steps]
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvePlan, defineTool, MemoryStore, ToolRegistry } from '@stepwise/core';
import { finishRun, invokeStep, startRun } from '@stepwise/core/engine';
import { sequentialEngine } from '@stepwise/engine-sequential';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { median, requireGc, writeResults } from '../_protocol.mjs';

requireGc();
const STEPS = Number(process.argv[2] ?? 10_000);
const ROUNDS = 5;
// The engine's CPU per 10,000-step run kept falling over its first four runs (150 to 50 µs per step
// on a loaded machine): one warm-up run measured the optimizing compiler as much as the engine.
const WARM_UP = Number(process.env.WARM_UP ?? 4);
const TARGETS = { memory: 15, sqlite: 60 };

let toolNanoseconds = 0n;
const noop = defineTool({
  name: 'noop',
  description: 'Does nothing; measures everything around it.',
  input: { type: 'object' },
  effect: 'read',
  execute: () => {
    const started = process.hrtime.bigint();
    const output = { ok: true };
    toolNanoseconds += process.hrtime.bigint() - started;
    return output;
  },
});
const tools = new ToolRegistry([noop]);
const planOf = (steps, id) => ({
  id,
  steps: Array.from({ length: steps }, (_, index) => ({ id: `s${index}`, tool: 'noop', args: { index } })),
});

const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-sequential-'));
let databases = 0;
const stores = {
  memory: () => new MemoryStore(),
  sqlite: () => createSqliteStore({ path: join(directory, `bench-${databases++}.db`), synchronous: 'NORMAL' }),
};

/** µs per step outside the tool for one complete run through the engine; also times the replay. */
async function engineRound(kind, steps, redactor) {
  const store = stores[kind]();
  const engine = sequentialEngine({ tools, store, ...(redactor ? { redactor } : {}) });
  const plan = planOf(steps, `bench_${kind}_${steps}`);
  const authorization = approvePlan(plan, { by: 'bench' });
  toolNanoseconds = 0n;
  globalThis.gc();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await engine.run(plan, { authorization }).result;
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (result.status !== 'completed' || result.steps.length !== steps) throw new Error(`bad run: ${result.status}`);
  const toolMs = Number(toolNanoseconds) / 1e6;
  const replayStarted = performance.now();
  const replay = await engine.run(plan, { authorization }).result;
  const replayMs = performance.now() - replayStarted;
  if (replay.steps.length !== steps) throw new Error('bad replay');
  await store.close();
  return {
    perStep: ((elapsed - toolMs) * 1000) / steps,
    cpuPerStep: (used.user + used.system) / steps,
    replayPerStep: (replayMs * 1000) / steps,
  };
}

/** The same work without the engine: the core kernel in a loop (no validation, no authorization). */
async function kernelRound(kind, steps) {
  const store = stores[kind]();
  const plan = planOf(steps, `kernel_${kind}_${steps}`);
  const runId = `run_kernel_${kind}_${steps}_${Math.random().toString(36).slice(2)}`;
  toolNanoseconds = 0n;
  globalThis.gc();
  const started = performance.now();
  const journal = await startRun({ store, runId, plan, engine: 'kernel-loop' });
  const results = [];
  for (const step of plan.steps) {
    results.push(await invokeStep(step, { attempt: 1, references: 'literal' }, { runId, journal, registry: tools }));
  }
  await finishRun(journal, { plan, engine: 'kernel-loop', status: 'completed', steps: results, durationMs: 0 });
  const elapsed = performance.now() - started;
  await store.close();
  return ((elapsed - Number(toolNanoseconds) / 1e6) * 1000) / steps;
}

const Database = createRequire(import.meta.resolve('@stepwise/store-sqlite'))('better-sqlite3');

/** µs per step of the bare transactions (see the header), on a fresh file in the same directory. */
function sqliteFloor(steps, transactionsPerStep = 2) {
  const database = new Database(join(directory, `floor-${databases++}.db`));
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('wal_autocheckpoint = 10000'); // the store's default checkpointPages
  database.exec(`
    create table runs (key integer primary key, id text not null unique);
    create table events (id integer primary key, type text not null, at integer not null, payload text not null);
    create table steps (run_key integer not null, step_id text not null, status text not null, execution_id text,
      started_at integer, ended_at integer, output text, primary key (run_key, step_id)) without rowid;
    create table executions (execution_id text primary key, run_key integer not null, step_id text not null,
      call_seq integer not null, status text not null, args text, result text) without rowid;
    create index executions_run_step on executions (run_key, step_id, call_seq);`);
  const runId = 'run_floor';
  database.prepare('insert into runs values (1, ?)').run(runId);
  const readRun = database.prepare(
    'select key, (select max(id) from events where id between key * 4294967296 and key * 4294967296 + 4294967295) from runs where id = ?',
  );
  const insertEvent = database.prepare('insert into events values (4294967296 + ?, ?, ?, ?)');
  const writeStep = database.prepare(
    `insert into steps values (1, ?, ?, ?, ?, ?, ?) on conflict (run_key, step_id) do update set
     status = excluded.status, ended_at = excluded.ended_at, output = excluded.output`,
  );
  const startExecution = database.prepare('insert into executions values (?, 1, ?, ?, ?, ?, null)');
  const endExecution = database.prepare('update executions set status = ?, result = ? where execution_id = ?');
  const beforeTool = database.transaction((index, executionId, at) => {
    readRun.get(runId);
    insertEvent.run(index * 4 + 1, 'step-start', at, '{"stepId":"s","tool":"noop","attempt":1}');
    insertEvent.run(index * 4 + 2, 'tool-call', at, `{"stepId":"s","tool":"noop","args":{"index":${index}}}`);
    writeStep.run(`s${index}`, 'running', executionId, at, null, null);
    startExecution.run(executionId, `s${index}`, index * 4 + 2, 'running', `{"index":${index}}`);
  });
  const stepEnd = database.transaction((index, executionId, at) => {
    readRun.get(runId);
    insertEvent.run(index * 4 + 3, 'tool-result', at, '{"status":"succeeded","output":{"ok":true}}');
    insertEvent.run(index * 4 + 4, 'step-end', at, '{"result":{"status":"succeeded","output":{"ok":true}}}');
    writeStep.run(`s${index}`, 'succeeded', executionId, at, at, '{"ok":true}');
    endExecution.run('succeeded', '{"ok":true}', executionId);
  });
  // An idempotent tool's step: call, result and end in one transaction.
  const bothInOne = database.transaction((index, executionId, at) => {
    beforeTool(index, executionId, at);
    stepEnd(index, executionId, at);
  });
  const run = (from, count) => {
    for (let index = from; index < from + count; index++) {
      const executionId = `ex_${((index * 2654435761) % 2 ** 32).toString(16).padStart(24, '0')}`;
      const at = Date.now();
      if (transactionsPerStep === 2) {
        beforeTool.immediate(index, executionId, at);
        stepEnd.immediate(index, executionId, at);
      } else {
        bothInOne.immediate(index, executionId, at);
      }
    }
  };
  run(0, steps); // warm-up, as the engine rounds have
  globalThis.gc();
  const started = performance.now();
  run(steps, steps);
  const perStep = ((performance.now() - started) * 1000) / steps;
  database.close();
  return perStep;
}

const noRedaction = { redact: (value) => value, redactText: (text) => text, addSecret: () => undefined };
const format = (value) => value.toFixed(1).padStart(8);

console.log(
  `engine-sequential overhead: ${STEPS} no-op steps, median of ${ROUNDS} rounds after ${WARM_UP} warm-up runs (node ${process.version})`,
);
console.log(
  `load average at start: ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')} (a loaded machine inflates every number)`,
);
const rows = [];
for (const kind of ['memory', 'sqlite']) {
  // Warm-up at full size: V8 reaches steady-state code (and the heap its steady size) only after
  // some 10,000 steps; a short warm-up measured the optimizing compiler, not the engine.
  for (let run = 0; run < WARM_UP; run++) {
    await engineRound(kind, STEPS);
    await kernelRound(kind, STEPS);
  }
  const engine = [];
  const engineCpu = [];
  const replay = [];
  const kernel = [];
  for (let round = 0; round < ROUNDS; round++) {
    // The engine first on even rounds, the kernel loop first on odd ones (bench/README.md).
    if (round % 2 === 1) kernel.push(await kernelRound(kind, STEPS));
    const measured = await engineRound(kind, STEPS);
    engine.push(measured.perStep);
    engineCpu.push(measured.cpuPerStep);
    replay.push(measured.replayPerStep);
    if (round % 2 === 0) kernel.push(await kernelRound(kind, STEPS));
  }
  rows.push({
    kind,
    engine: median(engine),
    engineCpu: median(engineCpu),
    kernel: median(kernel),
    replay: median(replay),
    rounds: engine,
  });
}

console.log('');
console.log('store    engine µs/step  core kernel loop µs/step  engine − kernel  replay µs/step  target  verdict');
for (const row of rows) {
  const target = TARGETS[row.kind];
  const verdict = row.engine <= target ? 'meets target' : `${(row.engine / target).toFixed(1)}× over target`;
  console.log(
    `${row.kind.padEnd(8)} ${format(row.engine)}        ${format(row.kernel)}                 ${format(row.engine - row.kernel)}     ${format(row.replay)}      ≤${String(target).padEnd(4)} ${verdict}`,
  );
}
for (const row of rows) {
  console.log(
    `  ${row.kind} engine rounds, µs/step: ${row.rounds.map((value) => value.toFixed(1)).join(', ')}; CPU (user + system, tool included) ${row.engineCpu.toFixed(1)} µs/step`,
  );
}
const [memory, sqlite] = rows;
const floor = [];
const twoFloor = [];
for (let round = 0; round < ROUNDS; round++) {
  floor.push(sqliteFloor(STEPS, 1));
  twoFloor.push(sqliteFloor(STEPS, 2));
}
const sqliteFloorPerStep = median(floor);
const twoFloorPerStep = median(twoFloor);
const versus = (value) => (value <= TARGETS.sqlite ? 'within' : `${(value / TARGETS.sqlite).toFixed(1)}× over`);
console.log('');
console.log(
  `floor: bare better-sqlite3, the one transaction a read tool's step needs, ${sqliteFloorPerStep.toFixed(1)} µs/step ` +
    `(${versus(sqliteFloorPerStep)} the ${TARGETS.sqlite} µs SQLite target before any engine work); engine with SQLite = ` +
    `${(sqlite.engine / sqliteFloorPerStep).toFixed(2)}× the floor`,
);
console.log(
  `       the same rows as two transactions (a non-idempotent tool's step): ` +
    `${twoFloorPerStep.toFixed(1)} µs/step (${versus(twoFloorPerStep)} the target)`,
);
console.log(
  `ratio engine/kernel: memory ${(memory.engine / memory.kernel).toFixed(2)}, sqlite ${(sqlite.engine / sqlite.kernel).toFixed(2)}`,
);
console.log(`ratio sqlite/memory (engine): ${(sqlite.engine / memory.engine).toFixed(2)}`);

const bare = [];
for (let round = 0; round < ROUNDS; round++) bare.push((await engineRound('memory', STEPS, noRedaction)).perStep);
const bareMedian = median(bare);
const share = 1 - bareMedian / memory.engine;
console.log(
  `diagnostic: memory with redaction off ${median(bare).toFixed(1)} µs/step (${
    share > 0
      ? `${(share * 100).toFixed(0)}% of the memory cost is core's redaction`
      : 'redaction cost is below the noise'
  }; measured after the rows above, so machine drift shows here too)`,
);
console.log(
  `load average at end: ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}`,
);
rmSync(directory, { recursive: true, force: true });
writeResults('overhead', {
  steps: STEPS,
  rounds: ROUNDS,
  warmUp: WARM_UP,
  rows: rows.map((row) => ({
    store: row.kind,
    'engine µs/step': row.engine.toFixed(1),
    'engine CPU µs/step': row.engineCpu.toFixed(1),
    'core kernel loop µs/step': row.kernel.toFixed(1),
    'engine − kernel': (row.engine - row.kernel).toFixed(1),
    'replay µs/step': row.replay.toFixed(1),
    target: TARGETS[row.kind],
    verdict:
      row.engine <= TARGETS[row.kind] ? 'meets target' : `${(row.engine / TARGETS[row.kind]).toFixed(1)}× over target`,
    rounds: row.rounds.map((value) => value.toFixed(1)),
  })),
  floor: {
    oneTransaction: sqliteFloorPerStep.toFixed(1),
    oneVersusTarget: versus(sqliteFloorPerStep),
    twoTransactions: twoFloorPerStep.toFixed(1),
    twoVersusTarget: versus(twoFloorPerStep),
    engineOverFloor: (sqlite.engine / sqliteFloorPerStep).toFixed(2),
    sqliteTarget: TARGETS.sqlite,
  },
  redactionOff: { memory: bareMedian.toFixed(1), share: share > 0 ? `${(share * 100).toFixed(0)}%` : undefined },
});
