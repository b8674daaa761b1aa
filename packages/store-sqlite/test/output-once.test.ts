import { join } from 'node:path';
import { type RunEvent, readAll } from '@stepwise/core';
import { deriveExecutionId } from '@stepwise/core/engine';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { stamp, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('output-once');
const runId = 'run_output_once';
const STEPS = 130;

/** A step's four events; its output is `output`, and its step-end's is `endOutput` (the same unless given). */
function stepInputs(index: number, output: unknown, endOutput = output): Record<string, unknown>[] {
  const stepId = `s${index}`;
  const executionId = deriveExecutionId(runId, stepId, 1);
  const at = '2026-05-01T10:00:00.123Z';
  const common = { stepId, tool: 'echo', status: 'succeeded', executionId };
  return [
    { type: 'step-start', stepId, tool: 'echo', attempt: 1, executionId },
    { type: 'tool-call', stepId, executionId, attempt: 1, tool: 'echo', effect: 'read', idempotent: true, args: {} },
    { type: 'tool-result', ...common, output, startedAt: at, durationMs: 1 },
    { type: 'step-end', stepId, result: { ...common, output: endOutput, attempt: 1, startedAt: at, durationMs: 1 } },
  ];
}

describe('an output journaled once', () => {
  it('is left out of the step-end that repeats it and read back in place, across a read page boundary', async () => {
    const path = join(directory, 'once.db');
    const store = createSqliteStore({ path });
    const plan = { id: 'p', steps: Array.from({ length: STEPS }, (_, index) => ({ id: `s${index}`, tool: 'echo' })) };
    const events: RunEvent[] = stamp(runId, 1, [
      { type: 'run-start', planId: 'p', planDigest: 'd', plan, engine: 'x' },
    ]);
    await store.append(runId, events);
    for (let index = 0; index < STEPS; index++) {
      // Step 3's step-end reports another output than its tool-result: it keeps its own.
      const inputs = stepInputs(index, { value: `out ${index}`, list: [index] }, index === 3 ? 'changed' : undefined);
      const batch = stamp(runId, events.length + 1, inputs as never);
      await store.append(runId, batch);
      events.push(...batch);
    }
    // Reads come in pages of 500: step 124's tool-result is seq 500, its step-end seq 501.
    expect((events[499] as RunEvent).type).toBe('tool-result');
    // Byte for byte: the output is put back at its place among the result's keys.
    expect(JSON.stringify(await readAll(store, runId))).toBe(JSON.stringify(events));
    expect(await store.readEvents(runId, 500, 1)).toEqual([events[500]]);
    const end = (await store.readEvents(runId, 500, 1))[0] as { result: { output: unknown } };
    // Each read is its own object: changing one event does not change the other.
    end.result.output = 'mutated';
    expect((await store.readEvents(runId, 499, 1))[0]).toEqual(events[499]);
    const steps = await store.listSteps(runId);
    expect(steps.map((step) => step.output)).toEqual(
      Array.from({ length: STEPS }, (_, index) => (index === 3 ? 'changed' : { value: `out ${index}`, list: [index] })),
    );
    await store.close();

    const sql = new Database(path, { readonly: true });
    const stepEnds = sql
      .prepare("select seq, json_extract(payload, '$.result.output') as output from journal where type = 'step-end'")
      .all() as { seq: number; output: string | null }[];
    expect(stepEnds.filter((row) => row.output !== null)).toEqual([{ seq: 17, output: 'changed' }]);
    const views = sql
      .prepare(
        "select s.output, x.result from steps_view s join executions_view x using (execution_id) where s.step_id = 's7'",
      )
      .get();
    expect(views).toEqual({ output: '{"value":"out 7","list":[7]}', result: '{"value":"out 7","list":[7]}' });
    sql.close();
  });
});

describe('a step-end and its tool-result in one batch', () => {
  it('leaves out the output up to 15 seqs after the tool-result, and keeps it 16 after', async () => {
    const store = createSqliteStore({ path: join(directory, 'distance.db') });
    for (const steps of [15, 16]) {
      const run = `${runId}_${steps}`;
      const plan = { id: 'p', steps: Array.from({ length: steps }, (_, index) => ({ id: `s${index}`, tool: 'echo' })) };
      await store.append(run, stamp(run, 1, [{ type: 'run-start', planId: 'p', planDigest: 'd', plan, engine: 'x' }]));
      // All starts, then all calls, all results, all ends (a fan-out's batch): each end is `steps` seqs after its result.
      const byStep = Array.from({ length: steps }, (_, index) => stepInputs(index, { value: index }));
      const inputs = [0, 1, 2, 3].flatMap((position) => byStep.map((events) => events[position]));
      const batch = stamp(run, 2, inputs as never);
      await store.append(run, batch);
      // Read back byte for byte, the left-out outputs put back in place.
      expect(JSON.stringify(await store.readEvents(run, 1))).toBe(JSON.stringify(batch));
    }
    await store.close();
    const sql = new Database(join(directory, 'distance.db'), { readonly: true });
    const kept = (steps: number) =>
      sql
        .prepare(
          "select count(*) from journal where run_id = ? and type = 'step-end' and json_extract(payload, '$.result.output') is not null",
        )
        .pluck()
        .get(`${runId}_${steps}`);
    expect([kept(15), kept(16)]).toEqual([0, 16]);
    sql.close();
  });
});

describe('the default inline limits', () => {
  it('follow the page size: a 1 KB output is a 999-byte piece and the rest in its tool-result, a 4 KB one goes to blobs, rows stay off overflow pages', async () => {
    const path = join(directory, 'limits.db');
    const store = createSqliteStore({ path });
    const text = (size: number) => 'x'.repeat(size);
    const plan = {
      id: 'p',
      steps: [
        { id: 's0', tool: 'echo' },
        { id: 's1', tool: 'echo' },
      ],
    };
    const events: RunEvent[] = stamp(runId, 1, [
      { type: 'run-start', planId: 'p', planDigest: 'd', plan, engine: 'x' },
    ]);
    await store.append(runId, events);
    for (const [index, size] of [1024, 4096].entries()) {
      const batch = stamp(runId, events.length + 1, stepInputs(index, { text: text(size) }) as never);
      await store.append(runId, batch);
      events.push(...batch);
    }
    expect(await readAll(store, runId)).toEqual(events);
    await store.close();
    const sql = new Database(path, { readonly: true });
    expect(sql.prepare('select size from blobs order by size').pluck().all()).toEqual([4096 + '{"text":""}'.length]);
    const toolResults = sql
      .prepare("select length(payload) as length, blob_refs from journal where type = 'tool-result' order by seq")
      .all() as { length: number; blob_refs: string | null }[];
    // Since schema version 10 the 1 KB output's first 999 bytes are a piece in event_chunks; the row keeps the rest.
    expect(toolResults[0]?.length).toBeLessThan(200);
    expect(JSON.parse(toolResults[0]?.blob_refs as string)).toEqual([[['output'], 1, 'json-chunks', 1]]);
    expect(sql.prepare('select length(content) from event_chunks').pluck().all()).toEqual([999]);
    expect(JSON.parse(toolResults[1]?.blob_refs as string)[0][2]).toBe('json');
    // No overflow page anywhere but the blob's own.
    const overflow = sql.prepare("select name from dbstat where pagetype = 'overflow' group by name").pluck().all();
    expect(overflow).toEqual(['blobs']);
    sql.close();
  });
});
