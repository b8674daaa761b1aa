// The floor of a durable run on SQLite: the rows the store wrote, written again straight through
// better-sqlite3, commit for commit. Built from a finished run's own database file (its schema, its
// event rows byte for byte, its step, execution, run and blob rows) and the batches the store was
// given (which events each commit held), so the floor writes the same number of rows and bytes into
// the same tables and indexes, under the same pragmas, with nothing to encode or decide.
//
// Per commit: the same read of the run row the store does for its lease and seq checks, the batch's
// event rows, each step the batch names updated to its final state (inserted pending at run-start),
// each execution inserted on its first batch and updated on later ones, the run row written at
// run-start and run-end. What the floor leaves out, in its favour: lease transactions (acquire,
// renew, release) and intermediate row values (it writes the final ones).
import { createRequire } from 'node:module';

const RUN_KEY_SHIFT = 2 ** 32;

export function betterSqlite(packages) {
  return createRequire(`${packages.root}/packages/store-sqlite/package.json`)('better-sqlite3');
}

/** Insertable columns of a table (generated ones left out). */
function columnsOf(database, table) {
  return database
    .prepare(`pragma table_xinfo(${table})`)
    .all()
    .filter((column) => column.hidden === 0)
    .map((column) => column.name);
}

const pick = (row, columns) => columns.map((column) => row[column]);

const STATE_RESET = {
  status: 'pending',
  attempt: 0,
  execution_id: null,
  started_at: null,
  ended_at: null,
  duration_ms: null,
  tool_called: 0,
  idempotent: null,
  output: null,
  output_sha256: null,
  error: null,
};

/** Everything the floor writes, read from the finished run's file once (untimed). */
export function floorWorkload(Database, path, batches) {
  const source = new Database(path, { readonly: true });
  const schema = source
    .prepare(
      "select sql from sqlite_master where sql is not null and type in ('table', 'index', 'trigger') and name not like 'sqlite_%' order by rowid",
    )
    .pluck()
    .all();
  const columns = { runs: columnsOf(source, 'runs'), steps: columnsOf(source, 'steps') };
  columns.executions = columnsOf(source, 'executions');
  columns.events = columnsOf(source, 'events');
  const idColumn = columns.events.indexOf('id');
  const run = source.prepare('select * from runs').get();
  const blobs = source.prepare('select sha256, size, content from blobs').raw().all();
  const events = new Map(
    source
      .prepare(`select ${columns.events.join(', ')} from events order by id`)
      .raw()
      .all()
      .map((row) => [Number(BigInt(row[idColumn]) % BigInt(RUN_KEY_SHIFT)), row]),
  );
  const steps = new Map(
    source
      .prepare('select * from steps')
      .all()
      .map((row) => [row.step_id, row]),
  );
  const executions = new Map(
    source
      .prepare('select * from executions')
      .all()
      .map((row) => [row.execution_id, row]),
  );
  source.close();
  const seen = new Set();
  const commits = batches.map((batch) => {
    const start = batch.find((event) => event.type === 'run-start');
    const stepIds = new Set(batch.filter((event) => event.stepId !== undefined).map((event) => event.stepId));
    const executionIds = [...new Set(batch.map((event) => event.executionId).filter((id) => executions.has(id)))];
    return {
      events: batch.map((event) => events.get(event.seq)),
      start: start !== undefined,
      end: batch.some((event) => event.type === 'run-end'),
      // At run-start every planned step gets its pending row; later batches update their steps.
      pendingSteps: start ? [...steps.values()].map((row) => pick({ ...row, ...STATE_RESET }, columns.steps)) : [],
      stepUpdates: start ? [] : [...stepIds].filter((id) => steps.has(id)).map((id) => steps.get(id)),
      executionRows: executionIds.map((id) => {
        const first = !seen.has(id);
        seen.add(id);
        return { first, row: executions.get(id) };
      }),
    };
  });
  return { schema, columns, run, blobs, commits, runId: run.id };
}

/** A new file at `path` with the workload's schema and the store's pragmas, open. */
export function openFloor(Database, path, workload, { synchronous, checkpointPages = 10_000 }) {
  const database = new Database(path, { timeout: 5000 });
  database.pragma('journal_mode = WAL');
  database.pragma(`synchronous = ${synchronous}`);
  database.pragma(`wal_autocheckpoint = ${checkpointPages}`);
  database.pragma('foreign_keys = ON');
  for (const sql of workload.schema) database.exec(sql);
  return database;
}

/**
 * Writes the workload to a new file at `path`, one IMMEDIATE transaction per commit; returns the
 * database still open (the caller times its close, as a store's close is timed).
 */
export function writeFloor(Database, path, workload, options) {
  return writeFloorRows(openFloor(Database, path, workload, options), workload);
}

/** Writes the workload into a database `openFloor` opened; returns it, still open. */
export function writeFloorRows(database, workload) {
  const { columns } = workload;
  const placeholders = (list) => list.map(() => '?').join(', ');
  const selectRun = database.prepare(
    `select key, coalesce((select max(id) from events where id between r.key * ${RUN_KEY_SHIFT} and r.key * ${RUN_KEY_SHIFT} + ${RUN_KEY_SHIFT - 1}), 0) as last,
       lease_owner, lease_token, lease_ttl_ms, lease_expires_at from runs r where id = ?`,
  );
  const insertRun = database.prepare(`insert into runs (${columns.runs}) values (${placeholders(columns.runs)})`);
  const endRun = database.prepare(
    'update runs set status = ?, finished_at = ?, duration_ms = ?, usage = ? where key = ?',
  );
  const insertBlob = database.prepare('insert into blobs (sha256, size, content) values (?, ?, ?)');
  const insertEvent = database.prepare(
    `insert into events (${columns.events}) values (${placeholders(columns.events)})`,
  );
  const insertStep = database.prepare(`insert into steps (${columns.steps}) values (${placeholders(columns.steps)})`);
  const state = Object.keys(STATE_RESET);
  const updateStep = database.prepare(
    `update steps set ${state.map((column) => `${column} = ?`).join(', ')} where run_key = ? and step_id = ?`,
  );
  const insertExecution = database.prepare(
    `insert into executions (${columns.executions}) values (${placeholders(columns.executions)})`,
  );
  // What a result changes in the row, as the file has it (schema version 9 keeps the result's fields in its event).
  const finished = [
    'result_seq',
    'finished_at',
    'status',
    'duration_ms',
    'exit_code',
    'error',
    'result',
    'result_sha256',
  ];
  const finishColumns = finished.filter((column) => columns.executions.includes(column));
  const finishExecution = database.prepare(
    `update executions set ${finishColumns.map((column) => `${column} = ?`).join(', ')} where execution_id = ? and run_key = ?`,
  );
  const run = workload.run;
  const commit = database.transaction((entry) => {
    selectRun.get(workload.runId);
    if (entry.start) {
      for (const blob of workload.blobs) insertBlob.run(blob);
      insertRun.run(
        pick({ ...run, status: 'running', finished_at: null, duration_ms: null, usage: null }, columns.runs),
      );
    }
    for (const row of entry.events) insertEvent.run(row);
    for (const row of entry.pendingSteps) insertStep.run(row);
    for (const row of entry.stepUpdates) updateStep.run(...pick(row, state), row.run_key, row.step_id);
    for (const { first, row } of entry.executionRows) {
      if (first) insertExecution.run(pick(row, columns.executions));
      else {
        finishExecution.run(...pick(row, finishColumns), row.execution_id, row.run_key);
      }
    }
    if (entry.end) endRun.run(run.status, run.finished_at, run.duration_ms, run.usage, run.key);
  });
  for (const entry of workload.commits) commit.immediate(entry);
  return database;
}
