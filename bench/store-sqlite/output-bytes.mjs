// Database bytes per step by output size: a chain of STEPS steps whose tool returns a string of
// 0 B, 100 B, 1 KB, 1,200 to 3,600 B (where a journal row of 1.5–4 KB would share its page badly), 4 KB
// or 64 KB, through @stepwise/engine-dag on @stepwise/store-sqlite (its
// defaults), next to the same chain as a LangGraph.js graph on SqliteSaver whose state keeps each
// node's output (an `output` channel each node overwrites: how a LangGraph node hands its result
// on). Both files are measured after closing (the WAL checkpointed into the file). Two figures per
// contender: file size / steps of a STEPS-step chain (the database's fixed cost spread over its
// steps included), and the marginal bytes per step, (file of a 2·STEPS-step chain − file of a
// STEPS-step chain) / STEPS (what one more step costs).
// The output strings are random-looking (hex), so page compression tricks cannot flatter anyone.
// Targets, on both figures: at 1 KB, ≤ SqliteSaver's bytes/step; at every size from 100 B to 64 KB,
// ≤ 1.5 × the output + 1 KB. Then a NO_OUTPUT_STEPS-step chain whose tool returns nothing, through
// the same engine and store: its file size / steps and, by SQLite's `dbstat`, the bytes per step of
// each table and index (target ≤ 1 KB per step). And, by `dbstat`, the pages of the journal's two
// tables (`events`, `event_chunks`) in each size's STEPS-step file and the bytes left unused in them
// (SQLite keeps a row whole on a page: see "Pages hold whole rows" in the package README).
// Sizes only: nothing here is timed.
//
//   node bench/store-sqlite/output-bytes.mjs [steps=500] [sizes=0,100,1024,1200,1600,…,3600,4096,65536]
//     [--before <rev>] [--after <rev>]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, StateGraph } from '@langchain/langgraph';
import { checkoutsFromArguments } from '../_packages.mjs';
import { machineLine, writeResults } from '../_protocol.mjs';
import { savers } from '../engine-dag/_langgraph.mjs';

const { checkouts, rest } = await checkoutsFromArguments();
const STEPS = Number(rest[0] ?? 500);
const SIZES = rest[1]
  ? rest[1].split(',').map(Number)
  : [0, 100, 1024, 1200, 1600, 1800, 2000, 2200, 2400, 3000, 3600, 4096, 65536];
const NO_OUTPUT_STEPS = 10_000;
const TARGET_NO_OUTPUT_BYTES = 1024;
/** This checkout's label (`HEAD`, or the `--after` rev), whose figures the targets judge. */
const OURS = checkouts.at(-1).label;
const Database = createRequire(import.meta.resolve('@stepwise/store-sqlite'))('better-sqlite3');
const label = (size) => (size >= 1024 && size % 1024 === 0 ? `${size / 1024} KB` : `${size} B`);
const directory = mkdtempSync(join(tmpdir(), 'stepwise-bench-output-bytes-'));
let files = 0;
const newPath = () => join(directory, `${files++}.db`);

/** A different output per step (as real outputs are), `size` characters of hex. */
const outputOf = (size, index) =>
  size === 0
    ? ''
    : randomBytes(Math.ceil(size / 2))
        .toString('hex')
        .slice(0, size)
        .padEnd(size, String(index % 10));

const fileBytes = (path) => statSync(path).size + (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0);

/** The database file of a `steps`-step chain through the dag engine whose tool runs `execute`, closed. */
async function stepwiseFile(packages, execute, steps) {
  const { core, testing, dag, sqlite } = packages;
  const tools = new core.ToolRegistry([
    core.defineTool({
      name: 'produce',
      description: "the bench's output",
      input: { type: 'object' },
      effect: 'read',
      execute,
    }),
  ]);
  const chain = testing.chainPlan(steps, 'produce');
  const plan = { ...chain, steps: chain.steps.map((step) => ({ ...step, args: {} })) };
  const path = newPath();
  const store = sqlite.createSqliteStore({ path });
  const result = await dag.dagEngine({ tools, store }).run(plan).result;
  await store.close();
  if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
  return path;
}

async function stepwiseBytes(packages, size, steps) {
  let index = 0;
  return stepwiseFile(packages, () => ({ value: outputOf(size, index++) }), steps);
}

/** `dbstat` of a closed database file, by table or index: pages, bytes, bytes unused in its pages. */
function pageUse(path) {
  const database = new Database(path, { readonly: true });
  const tables = database
    .prepare(
      'select name, count(*) as pages, sum(pgsize) as bytes, sum(unused) as unused from dbstat group by name order by bytes desc',
    )
    .all();
  database.close();
  return tables;
}

/** Pages of the journal's tables in a file and the bytes unused in them, as the results hold them. */
const journalPages = (path) =>
  pageUse(path)
    .filter((table) => table.name === 'events' || table.name === 'event_chunks')
    .map(({ name, pages, bytes, unused }) => ({ name, pages, bytes, unused }));

/**
 * A chain of NO_OUTPUT_STEPS steps whose tool returns nothing: file bytes per step, and each table's
 * and index's bytes per step by `dbstat` (those of more than two pages; the rest is the schema's).
 */
async function noOutputBytes(packages) {
  const path = await stepwiseFile(packages, () => undefined, NO_OUTPUT_STEPS);
  const tables = pageUse(path)
    .filter((table) => table.bytes > 8192)
    .map((table) => ({ name: table.name, perStep: Math.round(table.bytes / NO_OUTPUT_STEPS) }));
  const bytes = fileBytes(path);
  return { bytes, perStep: Math.round(bytes / NO_OUTPUT_STEPS), tables };
}

async function sqliteSaverBytes(size, steps) {
  const State = Annotation.Root({ output: Annotation({ reducer: (_, right) => right, default: () => undefined }) });
  const builder = new StateGraph(State);
  let previous = '__start__';
  for (let index = 0; index < steps; index++) {
    builder.addNode(`s${index}`, () => ({ output: { value: outputOf(size, index) } }));
    builder.addEdge(previous, `s${index}`);
    previous = `s${index}`;
  }
  builder.addEdge(previous, '__end__');
  const path = newPath();
  const saver = savers.SqliteSaver(path, 'NORMAL');
  const graph = builder.compile({ checkpointer: saver });
  await graph.invoke({}, { configurable: { thread_id: 'bytes' }, recursionLimit: steps + 10, durability: 'sync' });
  saver.db.close();
  return path;
}

/**
 * `measure(steps)` writes a chain's file and returns its path: [file bytes / STEPS of a STEPS-step
 * chain, marginal bytes per step from STEPS to 2·STEPS steps, the STEPS-step file's path].
 */
async function perStep(measure) {
  const once = await measure(STEPS);
  const twice = fileBytes(await measure(2 * STEPS));
  return [Math.round(fileBytes(once) / STEPS), Math.round((twice - fileBytes(once)) / STEPS), once];
}

const verdict = (bytes, limit) => (bytes <= limit ? 'met' : 'NOT met');

console.log(
  `database bytes per step by output size, ${STEPS}-step chains and marginal ${STEPS} → ${2 * STEPS} (${machineLine()})`,
);
const rows = [];
for (const size of SIZES) {
  const [saver, saverMarginal] = await perStep((steps) => sqliteSaverBytes(size, steps));
  const row = { size, output: label(size), SqliteSaver: saver, 'SqliteSaver marginal': saverMarginal };
  for (const { label: checkout, packages } of checkouts) {
    let file;
    [row[checkout], row[`${checkout} marginal`], file] = await perStep((steps) => stepwiseBytes(packages, size, steps));
    row[`${checkout} journal pages`] = journalPages(file);
  }
  const [ours, oursMarginal] = [row[OURS], row[`${OURS} marginal`]];
  const limit = size >= 100 ? 1.5 * size + 1024 : undefined;
  row['× SqliteSaver'] = (ours / saver).toFixed(2);
  row['× SqliteSaver marginal'] = (oursMarginal / saverMarginal).toFixed(2);
  row['limit 1.5×size+1 KB'] =
    limit === undefined
      ? ''
      : `${Math.round(limit)}: ${verdict(ours, limit)} (file/steps), ${verdict(oursMarginal, limit)} (marginal)`;
  rows.push(row);
}
const journalKey = `${OURS} journal pages`;
console.table(
  rows.map((row) => Object.fromEntries(Object.entries(row).filter(([key]) => !key.endsWith(' journal pages')))),
);
console.log(`journal pages of each ${STEPS}-step file (${OURS}), by dbstat: pages (bytes unused)`);
console.table(
  rows.map((row) => ({
    output: row.output,
    ...Object.fromEntries(row[journalKey].map((table) => [table.name, `${table.pages} (${table.unused})`])),
  })),
);
const kilobyte = rows.find((row) => row.size === 1024);
if (kilobyte)
  console.log(
    `1 KB outputs: ${kilobyte[OURS]} bytes/step against SqliteSaver's ${kilobyte.SqliteSaver} (target ≤: ${verdict(kilobyte[OURS], kilobyte.SqliteSaver)}); marginal ${kilobyte[`${OURS} marginal`]} against ${kilobyte['SqliteSaver marginal']} (${verdict(kilobyte[`${OURS} marginal`], kilobyte['SqliteSaver marginal'])})`,
  );
const noOutput = [];
for (const { label: checkout, packages } of checkouts) {
  const measured = { checkout, ...(await noOutputBytes(packages)) };
  noOutput.push(measured);
  console.log(
    `no output, ${NO_OUTPUT_STEPS}-step chain (${checkout}): ${measured.bytes} bytes = ${measured.perStep} bytes/step (target ≤ ${TARGET_NO_OUTPUT_BYTES}: ${verdict(measured.perStep, TARGET_NO_OUTPUT_BYTES)}); by dbstat, bytes/step: ${measured.tables.map((table) => `${table.name} ${table.perStep}`).join(', ')}`,
  );
}
// Other sizes than the README's are written apart (`scripts/bench-figures.mjs` reads `output-bytes`).
const name = `output-bytes${rest[1] ? '-sizes' : ''}${checkouts.length === 2 ? '-before-after' : ''}`;
writeResults(name, {
  steps: STEPS,
  ours: OURS,
  rows,
  noOutput: { steps: NO_OUTPUT_STEPS, target: TARGET_NO_OUTPUT_BYTES, checkouts: noOutput },
});
rmSync(directory, { recursive: true, force: true });
