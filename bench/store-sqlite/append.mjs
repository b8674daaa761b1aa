// Append throughput and database size of @stepwise/store-sqlite, against core's MemoryStore in the
// same process. A step-equivalent is the four events the step kernel journals for one step
// (step-start, tool-call, tool-result, step-end), appended as one batch, or as the two batches the
// kernel actually flushes (before the tool runs, and when the step ends).
//
//   node bench/store-sqlite/append.mjs [steps]      (default 10000; needs the packages built)

import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveExecutionId, MemoryStore } from '@stepwise/core';
import { chainPlan } from '@stepwise/core/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';

const STEPS = Number(process.argv[2] ?? 10_000);
const TARGET_MICROSECONDS_PER_STEP = 50;
const TARGET_BYTES_PER_STEP = 1024;

const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-store-'));
let runCounter = 0;

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
function stepEvents(runId, index, firstSeq) {
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

/** Appends `steps` step-equivalents to a new run; returns µs per step and appends per second. */
async function measure(store, steps, batching) {
  const runId = `run_bench_${String(runCounter++).padStart(4, '0')}_${'0'.repeat(20)}`;
  await store.append(runId, [runStart(runId, chainPlan(steps))]);
  let appends = 0;
  const started = process.hrtime.bigint();
  for (let index = 0; index < steps; index++) {
    const events = stepEvents(runId, index, 2 + index * 4);
    if (batching === 'one batch') {
      await store.append(runId, events);
      appends += 1;
    } else {
      await store.append(runId, events.slice(0, 2));
      await store.append(runId, events.slice(2));
      appends += 2;
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { microsecondsPerStep: (seconds * 1e6) / steps, appendsPerSecond: appends / seconds, runId };
}

const format = (value, digits = 1) => value.toLocaleString('en-US', { maximumFractionDigits: digits });

async function benchSqlite(synchronous, batching, steps) {
  const path = join(directory, `${synchronous}-${batching.replace(' ', '-')}.db`);
  const store = createSqliteStore({ path, synchronous });
  await store.ready;
  await measure(store, Math.min(500, steps), batching); // warm-up: JIT, page cache
  const result = await measure(store, steps, batching);
  await store.close();
  return { ...result, path };
}

async function benchMemory(batching, steps) {
  const store = new MemoryStore();
  await measure(store, Math.min(500, steps), batching);
  return measure(store, steps, batching);
}

/** Database bytes for one run of `steps` no-output steps (plan included), after checkpointing the WAL. */
async function bytesPerStep(steps) {
  const path = join(directory, 'size.db');
  const store = createSqliteStore({ path });
  const { runId } = await measure(store, steps, 'two batches');
  await store.close();
  const Database = createRequire(import.meta.resolve('@stepwise/store-sqlite'))('better-sqlite3');
  const database = new Database(path, { readonly: true });
  let tables = [];
  try {
    tables = database
      .prepare('select name, sum(pgsize) as bytes from dbstat group by name order by bytes desc')
      .all()
      .filter((table) => table.bytes > 4096);
  } catch {
    // dbstat is optional in SQLite builds; the total is what the target is about.
  }
  const events = database.prepare('select count(*) from events where run_id = ?').pluck().get(runId);
  database.close();
  const bytes = statSync(path).size;
  return { bytes, perStep: bytes / steps, tables, events };
}

const rows = [];
for (const batching of ['one batch', 'two batches']) {
  const memory = await benchMemory(batching, STEPS);
  rows.push({ store: 'MemoryStore', batching, ...memory });
  for (const synchronous of ['NORMAL', 'FULL']) {
    // FULL pays an fsync per append: fewer steps keep the run short on slow disks.
    const steps = synchronous === 'FULL' ? Math.min(STEPS, 2_000) : STEPS;
    const sqlite = await benchSqlite(synchronous, batching, steps);
    rows.push({
      store: `SQLite ${synchronous}`,
      batching,
      steps,
      ...sqlite,
      versusMemory: sqlite.microsecondsPerStep / memory.microsecondsPerStep,
    });
  }
}
const size = await bytesPerStep(STEPS);

console.log(`@stepwise/store-sqlite append benchmark (${STEPS} step-equivalents per run; Node ${process.version})`);
console.log(
  `targets: ≤ ${TARGET_MICROSECONDS_PER_STEP} µs per step-equivalent at NORMAL; ≤ ${TARGET_BYTES_PER_STEP} bytes of database per no-output step`,
);
console.log('');
console.log('store           batching       µs/step   appends/s   × MemoryStore');
for (const row of rows) {
  console.log(
    `${row.store.padEnd(15)} ${row.batching.padEnd(13)} ${format(row.microsecondsPerStep, 2).padStart(8)} ${format(row.appendsPerSecond, 0).padStart(11)}   ${row.versusMemory === undefined ? '1' : format(row.versusMemory, 1)}${row.steps && row.steps !== STEPS ? `   (${row.steps} steps)` : ''}`,
  );
}
console.log('');
console.log(
  `database size for a ${STEPS}-step run (plan, ${size.events} events, projections): ${format(size.bytes, 0)} bytes = ${format(size.perStep, 0)} bytes/step`,
);
for (const table of size.tables)
  console.log(`  ${table.name.padEnd(28)} ${format(table.bytes / STEPS, 0).padStart(6)} bytes/step`);
const normal = rows.find((row) => row.store === 'SQLite NORMAL' && row.batching === 'one batch');
console.log('');
console.log(
  `NORMAL, one batch per step: ${format(normal.microsecondsPerStep, 2)} µs/step (target ≤ ${TARGET_MICROSECONDS_PER_STEP}: ${normal.microsecondsPerStep <= TARGET_MICROSECONDS_PER_STEP ? 'met' : 'MISSED'})`,
);
console.log(
  `database: ${format(size.perStep, 0)} bytes/step (target ≤ ${TARGET_BYTES_PER_STEP}: ${size.perStep <= TARGET_BYTES_PER_STEP ? 'met' : 'MISSED'})`,
);
rmSync(directory, { recursive: true, force: true });
