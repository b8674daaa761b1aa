// Append throughput and database size of @stepwise/store-sqlite, measured in one process next to
// core's MemoryStore and to a bare better-sqlite3 journal (one table, no projections, no checks:
// the floor any SQLite journal pays on this machine).
//
// A step-equivalent is the four events the step kernel journals for a step without output
// (step-start, tool-call, tool-result, step-end), appended as one batch (what the kernel commits for a
// quick idempotent tool) or as two (a non-idempotent tool: before the tool runs; when the step ends).
// step-cost.mjs measures whole steps through the engine, group commit across concurrent steps included.
// Protocol (bench/README.md, `interleave`): a new store or database per run, made before the clock,
// closed on it (a checkpoint of what the run left in the WAL); gc() before each timed run, a
// full-size warm-up run of every contender, ROUNDS (default 3) rounds in one order and then its
// reverse, medians. The load average is printed; what it prints is written to
// bench/results/append.json for the README.
//
//   node bench/store-sqlite/append.mjs [steps]      (default 10000; build the packages first)

import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '@stepwise/core';
import { deriveExecutionId, newRunId } from '@stepwise/core/engine';
import { chainPlan } from '@stepwise/core/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { interleave, machineLine, median, requireGc, writeResults } from '../_protocol.mjs';

requireGc();
const STEPS = Number(process.argv[2] ?? 10_000);
// FULL pays an fsync per append: fewer steps keep the run short on slow disks.
const FULL_STEPS = Math.min(STEPS, 2_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TARGET_MICROSECONDS_PER_STEP = 50;
const TARGET_BYTES_PER_STEP = 1024;

const Database = createRequire(import.meta.resolve('@stepwise/store-sqlite'))('better-sqlite3');
const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-store-'));

function runStart(runId, plan) {
  return {
    type: 'run-start',
    planId: plan.id,
    planDigest: 'f'.repeat(64),
    plan,
    engine: 'dag',
    runId,
    seq: 1,
    at: new Date().toISOString(),
  };
}

/** The four events of one step without output, stamped as RunJournal stamps them. */
function stepEvents(runId, index) {
  const firstSeq = 2 + index * 4;
  const stepId = `s${index}`;
  const executionId = deriveExecutionId(runId, stepId, 1);
  const at = new Date().toISOString();
  return [
    { type: 'step-start', stepId, tool: 'echo', attempt: 1, executionId, runId, seq: firstSeq, at },
    {
      type: 'tool-call',
      stepId,
      executionId,
      attempt: 1,
      tool: 'echo',
      effect: 'read',
      idempotent: true,
      args: { value: index },
      runId,
      seq: firstSeq + 1,
      at,
    },
    {
      type: 'tool-result',
      stepId,
      executionId,
      tool: 'echo',
      status: 'succeeded',
      startedAt: at,
      durationMs: 0,
      runId,
      seq: firstSeq + 2,
      at,
    },
    {
      type: 'step-end',
      stepId,
      result: { stepId, tool: 'echo', status: 'succeeded', executionId, attempt: 1, startedAt: at, durationMs: 0 },
      runId,
      seq: firstSeq + 3,
      at,
    },
  ];
}

/** Events are built before the clock starts: only appending is timed. */
function workload(steps) {
  const runId = newRunId();
  const batches = Array.from({ length: steps }, (_, index) => stepEvents(runId, index));
  return { runId, start: runStart(runId, chainPlan(steps)), batches };
}

/** Appends a workload's step batches: one append per step, or two (`batching`). */
async function appendSteps(store, runId, batches, batching) {
  for (const events of batches) {
    if (batching === 'one batch') await store.append(runId, events);
    else {
      await store.append(runId, events.slice(0, 2));
      await store.append(runId, events.slice(2));
    }
  }
}

let files = 0;

/**
 * A contender for `interleave`: `open()` makes its store (untimed, with the workload and its
 * run-start appended); the run appends the steps and, for SQLite, closes the database on the clock
 * (closing checkpoints what the run left in the WAL: bench/README.md).
 */
const contender = (open, steps, batching) => ({
  setup: async () => {
    const store = await open();
    const { runId, start, batches } = workload(steps);
    await store.append(runId, [start]);
    return { store, runId, batches };
  },
  run: async ({ store, runId, batches }) => {
    await appendSteps(store, runId, batches, batching);
    await store.close();
  },
});

const openSqliteStore = (synchronous) => async () => {
  const store = createSqliteStore({ path: join(directory, `store-${files++}.db`), synchronous });
  await store.ready;
  return store;
};

/** A journal table and nothing else: the same rows, four inserts per transaction, with the store's interface. */
async function openBareSqlite() {
  const database = new Database(join(directory, `bare-${files++}.db`));
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('wal_autocheckpoint = 10000'); // the store's default checkpointPages
  database.exec(
    'create table events (run_id text not null, seq integer not null, type text not null, at text not null, payload text not null, primary key (run_id, seq)) without rowid',
  );
  const insert = database.prepare('insert into events values (?, ?, ?, ?, ?)');
  const write = database.transaction((events) => {
    for (const { runId, seq, type, at, ...rest } of events) insert.run(runId, seq, type, at, JSON.stringify(rest));
  });
  return {
    append: async (_runId, events) => write.immediate(events),
    close: async () => database.close(),
  };
}

/** Database bytes of one run of `steps` no-output steps (its plan included), after the WAL is checkpointed. */
async function bytesPerStep(steps) {
  const path = join(directory, 'size.db');
  const store = createSqliteStore({ path });
  const { runId, start, batches } = workload(steps);
  await store.append(runId, [start]);
  await appendSteps(store, runId, batches, 'two batches');
  await store.close();
  const database = new Database(path, { readonly: true });
  let tables = [];
  try {
    tables = database
      .prepare('select name, sum(pgsize) as bytes from dbstat group by name order by bytes desc')
      .all()
      .filter((table) => table.bytes > 8192);
  } catch {
    // dbstat is optional in SQLite builds; the total is what the target is about.
  }
  const events = database.prepare('select count(*) from journal where run_id = ?').pluck().get(runId);
  database.close();
  const bytes = statSync(path).size;
  return { bytes, perStep: bytes / steps, tables, events };
}

const format = (value, digits = 1) => value.toLocaleString('en-US', { maximumFractionDigits: digits });

console.log(`${machineLine()} at the start`);
const rows = [];
for (const batching of ['one batch', 'two batches']) {
  const appendsPerStep = batching === 'one batch' ? 1 : 2;
  const contenders = {
    MemoryStore: contender(async () => new MemoryStore(), STEPS, batching),
    'bare SQLite': contender(openBareSqlite, STEPS, batching),
    'store NORMAL': contender(openSqliteStore('NORMAL'), STEPS, batching),
    'store FULL': contender(openSqliteStore('FULL'), FULL_STEPS, batching),
  };
  const samples = await interleave(contenders, { rounds: ROUNDS, warmUp: 1 });
  const measured = Object.fromEntries(
    Object.keys(contenders).map((name) => {
      const steps = name === 'store FULL' ? FULL_STEPS : STEPS;
      const ms = median(samples[name].ms);
      return [
        name,
        { steps, microsecondsPerStep: (ms * 1000) / steps, appendsPerSecond: (steps * appendsPerStep * 1000) / ms },
      ];
    }),
  );
  const memory = measured.MemoryStore;
  const bare = measured['bare SQLite'];
  rows.push({ store: 'MemoryStore', batching, ...memory });
  rows.push({ store: 'bare SQLite', batching, ...bare });
  for (const synchronous of ['NORMAL', 'FULL']) {
    const result = measured[`store ${synchronous}`];
    rows.push({
      store: `store ${synchronous}`,
      batching,
      ...result,
      versusMemory: result.microsecondsPerStep / memory.microsecondsPerStep,
      versusBare: result.microsecondsPerStep / bare.microsecondsPerStep,
    });
  }
}
const size = await bytesPerStep(STEPS);

console.log(`@stepwise/store-sqlite append benchmark (${machineLine()} at the end)`);
console.log(
  `targets: ≤ ${TARGET_MICROSECONDS_PER_STEP} µs per step-equivalent at NORMAL; ≤ ${TARGET_BYTES_PER_STEP} bytes of database per no-output step`,
);
console.log('');
console.log('store          batching       steps    µs/step   appends/s   × MemoryStore   × bare SQLite');
for (const row of rows) {
  console.log(
    [
      row.store.padEnd(14),
      row.batching.padEnd(12),
      String(row.steps).padStart(7),
      format(row.microsecondsPerStep, 2).padStart(10),
      format(row.appendsPerSecond, 0).padStart(11),
      (row.versusMemory === undefined ? '' : format(row.versusMemory, 1)).padStart(15),
      (row.versusBare === undefined ? '' : format(row.versusBare, 1)).padStart(15),
    ].join(' '),
  );
}
console.log('');
console.log(
  `database for a ${STEPS}-step run (plan, ${size.events} events, projections): ${format(size.bytes, 0)} bytes = ${format(size.perStep, 0)} bytes/step`,
);
for (const table of size.tables)
  console.log(`  ${table.name.padEnd(24)} ${format(table.bytes / STEPS, 0).padStart(6)} bytes/step`);
const normal = rows.find((row) => row.store === 'store NORMAL' && row.batching === 'one batch');
console.log('');
console.log(
  `measured: ${format(normal.microsecondsPerStep, 2)} µs per step-equivalent at NORMAL (target ≤ ${TARGET_MICROSECONDS_PER_STEP}: ${normal.microsecondsPerStep <= TARGET_MICROSECONDS_PER_STEP ? 'met' : 'not met on this machine'}; ${format(normal.versusBare, 1)}× the bare SQLite journal measured here)`,
);
console.log(
  `measured: ${format(size.perStep, 0)} bytes per no-output step (target ≤ ${TARGET_BYTES_PER_STEP}: ${size.perStep <= TARGET_BYTES_PER_STEP ? 'met' : 'not met'})`,
);
rmSync(directory, { recursive: true, force: true });
writeResults('append', {
  steps: STEPS,
  rounds: ROUNDS,
  targets: { microsecondsPerStep: TARGET_MICROSECONDS_PER_STEP, bytesPerStep: TARGET_BYTES_PER_STEP },
  rows: rows.map((row) => ({
    store: row.store,
    batching: row.batching,
    steps: row.steps,
    'µs/step': format(row.microsecondsPerStep, 2),
    'appends/s': format(row.appendsPerSecond, 0),
    '× MemoryStore': row.versusMemory === undefined ? '' : format(row.versusMemory, 1),
    '× bare SQLite': row.versusBare === undefined ? '' : format(row.versusBare, 1),
  })),
  size: {
    bytes: format(size.bytes, 0),
    perStep: format(size.perStep, 0),
    events: size.events,
    tables: size.tables.map((table) => ({ name: table.name, perStep: format(table.bytes / STEPS, 0) })),
  },
  measured: {
    microsecondsPerStep: format(normal.microsecondsPerStep, 2),
    met: normal.microsecondsPerStep <= TARGET_MICROSECONDS_PER_STEP,
    versusBare: format(normal.versusBare, 1),
    bytesMet: size.perStep <= TARGET_BYTES_PER_STEP,
  },
});
