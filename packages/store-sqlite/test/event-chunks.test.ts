import { join } from 'node:path';
import { defineTool, type RunEvent, readAll, ToolRegistry, verifyJournal } from '@stepwise/core';
import { createPolicyEngine, deriveExecutionId, permissivePolicy } from '@stepwise/core/engine';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { chunkBytesOf } from '../src/event-chunks.js';
import { createSqliteStore } from '../src/index.js';
import { outputInlineBytesOf } from '../src/sqlite-store-options.js';
import { runStart, stamp, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('event-chunks');
/** The default page is 4 KB: a piece is 999 bytes, an output over 3,549 bytes goes to `blobs`. */
const PIECE = chunkBytesOf(4096);
const INLINE_LIMIT = outputInlineBytesOf(4096);

/** An output whose JSON text (`{"text":"xx…"}`) is `bytes` UTF-8 bytes. */
function outputOfBytes(bytes: number): { text: string } {
  const text = 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify({ text: '' })));
  expect(Buffer.byteLength(JSON.stringify({ text }))).toBe(bytes);
  return { text };
}

/** A step's four events (its step-end repeats the output, so the store leaves it out of the step-end). */
function stepEvents(runId: string, seq: number, index: number, output: unknown): RunEvent[] {
  const stepId = `s${index}`;
  const executionId = deriveExecutionId(runId, stepId, 1);
  const at = '2026-05-01T10:00:00.123Z';
  const common = { stepId, tool: 'echo', status: 'succeeded', executionId };
  return stamp(runId, seq, [
    { type: 'step-start', stepId, tool: 'echo', attempt: 1, executionId },
    { type: 'tool-call', stepId, executionId, attempt: 1, tool: 'echo', effect: 'read', idempotent: true, args: {} },
    { type: 'tool-result', ...common, output, startedAt: at, durationMs: 1 },
    { type: 'step-end', stepId, result: { ...common, output, attempt: 1, startedAt: at, durationMs: 1 } },
  ] as never);
}

interface ResultRow {
  readonly blob_refs: string | null;
  readonly payload: string;
  readonly pieces: number;
  readonly bytes: number | null;
}

/** Per tool-result of the run: its refs, its payload, and its pieces in `event_chunks` (by `event_id`). */
const toolResultRows = (database: Database.Database, runId: string): ResultRow[] =>
  database
    .prepare(
      `select j.blob_refs, j.payload,
         (select count(*) from event_chunks c where c.event_id = j.run_key * 4294967296 + j.seq) as pieces,
         (select sum(length(c.content)) from event_chunks c where c.event_id = j.run_key * 4294967296 + j.seq) as bytes
       from journal j where j.run_id = ? and j.type = 'tool-result' order by j.seq`,
    )
    .all(runId) as ResultRow[];

describe('outputs written in pieces (schema version 10)', () => {
  it('reads back byte for byte at, one under and one over the piece size, across a character, and at the inline limit', async () => {
    const path = join(directory, 'threshold.db');
    const store = createSqliteStore({ path });
    const runId = 'run_threshold';
    const sizes = [PIECE - 1, PIECE, PIECE + 1, 2 * PIECE, 2 * PIECE + 1, INLINE_LIMIT - 20, INLINE_LIMIT + 20];
    // 'é' is two bytes: in `{"text":"aéé…"}` one starts at byte 998, so the first cut (999) falls inside it.
    const outputs = [
      ...sizes.map((size) => outputOfBytes(size)),
      { text: `a${'é'.repeat(495)}` },
      { text: '€'.repeat(700) },
    ];
    const events = [runStart(runId)];
    for (const [index, output] of outputs.entries())
      events.push(...stepEvents(runId, events.length + 1, index, output));
    await store.append(runId, events);
    expect(JSON.stringify(await readAll(store, runId))).toBe(JSON.stringify(events));
    const steps = await store.listSteps(runId);
    expect(steps.map((step) => step.output)).toEqual(outputs);
    const execution = await store.getExecution(steps[1]?.executionId as string);
    expect(execution?.output).toEqual(outputs[1]);
    await store.close();

    const database = new Database(path, { readonly: true });
    const rows = toolResultRows(database, runId);
    // Under a piece: inline, as before. At a piece: one piece, nothing left. One over: one piece and one byte.
    expect(rows[0]).toMatchObject({ blob_refs: null, pieces: 0 });
    expect(rows[1]).toMatchObject({ pieces: 1, bytes: PIECE });
    expect(JSON.parse(rows[1]?.payload as string).output).toBe('');
    expect(rows[2]).toMatchObject({ pieces: 1, bytes: PIECE });
    expect(JSON.parse(rows[2]?.payload as string).output).toBe('}');
    expect(rows[3]).toMatchObject({ pieces: 2, bytes: 2 * PIECE });
    expect(rows[4]).toMatchObject({ pieces: 2, bytes: 2 * PIECE });
    expect(rows[5]).toMatchObject({ pieces: 3, bytes: 3 * PIECE });
    expect(JSON.parse(rows[5]?.blob_refs as string)).toEqual([[['output'], expect.any(Number), 'json-chunks', 3]]);
    // Over the inline limit: one blob, as before.
    expect(rows[6]).toMatchObject({ pieces: 0 });
    expect(JSON.parse(rows[6]?.blob_refs as string)[0][2]).toBe('json');
    // The cut falls inside an 'é': the piece ends one byte early, the rest starts with the character.
    expect(rows[7]).toMatchObject({ pieces: 1, bytes: PIECE - 1 });
    expect(JSON.parse(rows[7]?.payload as string).output).toBe('é"}');
    // The views show each output's JSON text, pieces put together.
    const viewed = database
      .prepare(
        `select x.result, s.output from executions_view x join steps_view s
           on s.run_id = x.run_id and s.execution_id = x.execution_id
         where x.run_id = ? order by x.call_seq`,
      )
      .all(runId) as { result: string; output: string }[];
    expect(viewed.map((row) => row.result)).toEqual(
      outputs.map((output, index) => (index === 6 ? null : JSON.stringify(output))),
    );
    expect(viewed.map((row) => row.output)).toEqual(viewed.map((row) => row.result));
    database.close();
  });

  it('writes the pieces of an event in its batch transaction: an aborted batch leaves none behind', async () => {
    const path = join(directory, 'aborted.db');
    const runId = 'run_aborted';
    const store = createSqliteStore({ path });
    const first = runStart(runId);
    await store.append(runId, [first]);
    await store.close();
    // A trigger refuses the step's step-end (seq 5): the tool-result's pieces are written before it.
    const setup = new Database(path);
    setup.exec(`create trigger refuse_step_end before insert on events when new.id % 4294967296 = 5
      begin select raise(abort, 'refused'); end`);
    setup.close();

    const reopened = createSqliteStore({ path });
    const batch = stepEvents(runId, 2, 0, outputOfBytes(2400));
    await expect(reopened.append(runId, batch)).rejects.toThrow(/refused/);
    const database = new Database(path);
    expect(database.prepare('select count(*) from event_chunks').pluck().get()).toBe(0);
    expect(database.prepare('select count(*) from events').pluck().get()).toBe(1);
    database.exec('drop trigger refuse_step_end');
    database.close();
    // The same batch is then written whole, pieces and all.
    await reopened.append(runId, batch);
    expect(JSON.stringify(await readAll(reopened, runId))).toBe(JSON.stringify([first, ...batch]));
    const pieces = new Database(path, { readonly: true });
    expect(pieces.prepare('select count(*) from event_chunks').pluck().get()).toBe(2);
    pieces.close();
    await reopened.close();
  });

  it('keeps the hash chain of a real run whose outputs span the sizes, and reads damaged pieces as a typed error', async () => {
    const path = join(directory, 'engine.db');
    const sizes = [0, 100, 998, 999, 1000, 1600, 1800, 2000, 2200, 2400, 3000, 3548, 3600, 4096];
    const tools = new ToolRegistry([
      defineTool({
        name: 'produce',
        description: 'returns a text of the size asked, with characters of every width',
        input: { type: 'object', properties: { size: { type: 'number' } }, required: ['size'] },
        effect: 'read',
        execute: (input) => ({
          value: 'aé€😀'
            .repeat(Math.ceil((input as { size: number }).size / 10))
            .slice(0, (input as { size: number }).size),
        }),
      }),
    ]);
    const plan = {
      id: 'sizes',
      steps: sizes.map((size, index) => ({
        id: `s${index}`,
        tool: 'produce',
        args: { size },
        ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
      })),
    };
    const store = createSqliteStore({ path });
    const engine = createPolicyEngine({
      policy: permissivePolicy({ tools }, { name: 'dag', validation: 'dag' }),
      options: { tools, store },
    });
    const result = await engine.run(plan, { runId: 'run_engine' }).result;
    expect(result.status).toBe('completed');
    const events = await readAll(store, 'run_engine');
    expect(verifyJournal('run_engine', events)).toMatchObject({ ok: true });
    const outputs = events
      .filter((event) => event.type === 'tool-result')
      .map((event) => (event as { output?: unknown }).output);
    expect(outputs).toEqual(result.steps.map((step) => step.output));
    await store.close();

    const database = new Database(path);
    expect(database.prepare('select count(*) from event_chunks').pluck().get()).toBeGreaterThan(10);
    database.exec('delete from event_chunks where id = (select max(id) from event_chunks)');
    database.close();
    const damaged = createSqliteStore({ path });
    await expect(readAll(damaged, 'run_engine')).rejects.toMatchObject({ code: 'E503' });
    await damaged.close();
  });
});
