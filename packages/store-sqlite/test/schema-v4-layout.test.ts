import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  defineTool,
  type ExecutionRecord,
  type Plan,
  type RunEvent,
  readAll,
  ToolError,
  ToolRegistry,
} from '@stepwise/core';
import { createPolicyEngine, permissivePolicy } from '@stepwise/core/engine';
import { executionRecord, foldRun } from '@stepwise/core/store';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION, type StepRecord } from '../src/index.js';
import { stepsFromFold } from './fold-expectations.js';
import { fixture, temporaryDirectory } from './helpers.js';

// Written by the store at schema version 4 (commit a26d537) with
// test/fixtures/schema-v4/write-schema-v4-fixture.mjs: outputs held by four rows each, a 1 KB one
// spilling into overflow pages. The JSON is what that release read back from the file.
const DATABASE = fixture('schema-v4/schema-v4.sqlite');
const READS = JSON.parse(readFileSync(fixture('schema-v4/schema-v4-reads.json'), 'utf8')) as {
  status: string;
  events: RunEvent[];
  steps: StepRecord[];
  executions: ExecutionRecord[];
};
const OLD_RUN = 'run_outputs';
const NEW_RUN = 'run_outputs_again';

// The fixture's tools, so a run in the migrated file produces the same outputs.
const text = (size: number, seed: number) =>
  Array.from({ length: size }, (_, index) => 'abcdefghij'[(index * 7 + seed) % 10]).join('');
const tools = new ToolRegistry([
  defineTool({
    name: 'produce',
    description: 'Returns a text of the size asked',
    input: { type: 'object', properties: { size: { type: 'number' } }, required: ['size'] },
    effect: 'read',
    execute: ({ size }: { size: number }) => (size === 0 ? undefined : { text: text(size, size % 7) }),
  }),
  defineTool({
    name: 'fail',
    description: 'Always fails',
    input: { type: 'object' },
    effect: 'read',
    execute: () => {
      throw new ToolError({ code: 'E305', message: 'refused', retryable: false });
    },
  }),
  defineTool({
    name: 'publish',
    description: 'Publishes',
    input: { type: 'object' },
    effect: 'write',
    execute: () => ({ published: true }),
  }),
]);

const directory = temporaryDirectory('schema-v4');

/** Each step's output column as the views show it, by step id. */
function viewOutputs(sql: Database.Database, runId: string) {
  const steps = sql
    .prepare('select step_id, output, output_sha256 from steps_view where run_id = ? order by step_id')
    .all(runId);
  const executions = sql
    .prepare('select step_id, result, result_sha256 from executions_view where run_id = ? order by step_id')
    .all(runId);
  return { steps, executions };
}

describe('a database written at schema version 4', () => {
  it('opens (migrated), reads back what version 4 read, and holds a new run once per output beside the old one', async () => {
    const path = join(directory, 'copy.sqlite');
    copyFileSync(DATABASE, path);
    const before = new Database(path, { readonly: true });
    expect(before.pragma('user_version', { simple: true })).toBe(4);
    const oldViews = viewOutputs(before, OLD_RUN);
    before.close();

    const store = createSqliteStore({ path });
    const events = await readAll(store, OLD_RUN);
    expect(events).toEqual(READS.events);
    const steps = await store.listSteps(OLD_RUN);
    expect(steps).toEqual(READS.steps);
    expect(steps).toEqual(stepsFromFold(foldRun(events, OLD_RUN)));
    for (const record of READS.executions) expect(await store.getExecution(record.executionId)).toEqual(record);

    // The same plan again, in the migrated file: written in the new layout.
    const plan = (READS.events[0] as RunEvent & { plan: Plan }).plan;
    const engine = createPolicyEngine({
      policy: permissivePolicy({ tools }, { name: 'dag', validation: 'dag' }),
      options: { tools, store },
    });
    const result = await engine.run(plan, { runId: NEW_RUN }).result;
    expect(result.status).toBe(READS.status);
    const newEvents = await readAll(store, NEW_RUN);
    const fold = foldRun(newEvents, NEW_RUN);
    const newSteps = await store.listSteps(NEW_RUN);
    expect(newSteps).toEqual(stepsFromFold(fold));
    expect(newSteps.map((step) => [step.stepId, step.output])).toEqual(steps.map((step) => [step.stepId, step.output]));
    for (const executionId of fold.executions.keys()) {
      expect(await store.getExecution(executionId)).toEqual(executionRecord(fold, executionId));
    }
    const kilobyteEnd = newEvents.find((event) => event.type === 'step-end' && event.stepId === 'kilobyte');
    expect((kilobyteEnd as { result?: { output?: unknown } }).result?.output).toEqual({ text: text(1024, 1024 % 7) });
    await store.close();

    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    // The views show both runs' outputs alike; the old rows are as they were.
    expect(viewOutputs(after, OLD_RUN)).toEqual(oldViews);
    expect(viewOutputs(after, NEW_RUN)).toEqual(oldViews);
    const kilobyte = (runId: string) =>
      after
        .prepare(
          `select s.output, s.output_from_execution, x.result,
             (select json_extract(e.payload, '$.result.output') from journal e
               where e.run_id = ? and e.type = 'step-end' and json_extract(e.payload, '$.stepId') = 'kilobyte') as step_end
           from steps s join executions x on x.execution_id = s.execution_id join runs r on r.key = s.run_key
           where r.id = ? and s.step_id = 'kilobyte'`,
        )
        .get(runId, runId) as Record<string, unknown>;
    // Version 4 held the 1 KB output in four places; now only the tool-result event holds it.
    expect(kilobyte(OLD_RUN)).toMatchObject({ output_from_execution: 0, output: expect.any(String) });
    expect(kilobyte(OLD_RUN).result).toEqual(kilobyte(OLD_RUN).output);
    expect(kilobyte(OLD_RUN).step_end).toEqual(expect.any(String));
    expect(kilobyte(NEW_RUN)).toEqual({ output: null, output_from_execution: 1, result: null, step_end: null });
    after.close();
  });
});
