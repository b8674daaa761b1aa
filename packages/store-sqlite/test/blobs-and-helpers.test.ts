import { statSync } from 'node:fs';
import { join } from 'node:path';
import { defineTool, type Plan, type RunEvent, readAll, ToolRegistry } from '@stepwise/core';
import { invokeStep, startRun } from '@stepwise/core/engine';
import { executionRecord, foldRun } from '@stepwise/core/store';
import { makePlan } from '@stepwise/core/testing';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, SCHEMA_VERSION } from '../src/index.js';
import { MIGRATION_NAMES } from '../src/schema-version.js';
import { stamp, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('blobs');
const bigText = Array.from({ length: 4_000 }, (_, index) => `line ${index} of the build log`).join('\n');

const tools = new ToolRegistry([
  defineTool({
    name: 'build',
    description: 'Returns a large log as output and as a stdout artifact.',
    input: { type: 'object' },
    effect: 'read',
    execute: (_input, context) => {
      context.addArtifact({ kind: 'stdout', content: bigText });
      return { exitCode: 0, log: bigText };
    },
  }),
]);

const plan: Plan = makePlan([{ id: 'build', tool: 'build', args: {} }], { id: 'plan_blobs' });

async function runBuild(path: string, runId: string): Promise<RunEvent[]> {
  const store = createSqliteStore({ path, artifactThresholdBytes: 1024 });
  const journal = await startRun({ store, runId, plan, engine: 'test' });
  const journaled: RunEvent[] = [];
  journal.subscribe((event) => journaled.push(event));
  await invokeStep(
    plan.steps[0] as Plan['steps'][0],
    { attempt: 1, references: 'literal' },
    { runId, journal, registry: tools },
  );
  await journal.close();
  // Read back through a fresh connection: what was written, not what a cache remembers.
  await store.close();
  const reopened = createSqliteStore({ path });
  const events = await readAll(reopened, runId);
  expect(events.slice(1)).toEqual(journaled);
  const run = foldRun(events);
  for (const executionId of run.executions.keys()) {
    expect(await reopened.getExecution(executionId)).toEqual(executionRecord(run, executionId));
  }
  const [step] = await reopened.listSteps(runId);
  expect(step?.output).toEqual({ exitCode: 0, log: bigText });
  await reopened.close();
  return events;
}

describe('large values', () => {
  it('are stored once, however many events and rows hold them, and read back whole', async () => {
    const path = join(directory, 'blobs.db');
    await runBuild(path, 'run_blobs_1');
    const database = new Database(path, { readonly: true });
    const blobs = () => database.prepare('select count(*) from blobs').pluck().get();
    // The output (in tool-result, step-end, executions, steps) and the artifact (in tool-result,
    // step-end, artifacts): two blobs.
    expect(blobs()).toBe(2);
    const largestPayload = database.prepare('select max(length(payload)) from events').pluck().get() as number;
    expect(largestPayload).toBeLessThan(2_000);
    const execution = database.prepare('select result, result_sha256, exit_code from executions').get() as Record<
      string,
      unknown
    >;
    expect(execution).toMatchObject({ result: null, exit_code: 0 });
    expect(execution.result_sha256).toEqual(expect.any(String));
    // The step's output is its execution's: its row refers to it, and its view shows the same blob.
    expect(database.prepare('select output_sha256, output_from_execution from steps').get()).toEqual({
      output_sha256: null,
      output_from_execution: 1,
    });
    expect(database.prepare('select output_sha256 from steps_view').pluck().get()).toBe(execution.result_sha256);
    const artifact = database.prepare('select kind, size, content, content_sha256 from artifacts').get() as Record<
      string,
      unknown
    >;
    expect(artifact).toMatchObject({ kind: 'stdout', size: Buffer.byteLength(bigText), content: null });
    expect(database.prepare('select content from blobs where sha256 = ?').pluck().get(artifact.content_sha256)).toBe(
      bigText,
    );
    database.close();
    // The whole file holds the log about twice (output JSON and artifact), not six times.
    expect(statSync(path).size).toBeLessThan(Buffer.byteLength(bigText) * 2 + 200_000);

    // The same output in another run adds no blob.
    await runBuild(path, 'run_blobs_2');
    const again = new Database(path, { readonly: true });
    expect(again.prepare('select count(*) from blobs').pluck().get()).toBe(2);
    again.close();
  });
});

describe('query helpers', () => {
  it('list steps in the fold order and executions per step, and expose the path', async () => {
    const path = join(directory, 'helpers.db');
    const store = createSqliteStore({ path });
    expect(store.path).toBe(path);
    const runId = 'run_helpers';
    await store.append(
      runId,
      stamp(runId, 1, [
        {
          type: 'run-start',
          planId: 'p',
          planDigest: 'd',
          plan: {
            id: 'p',
            version: 1,
            steps: [
              { id: 'zeta', tool: 'echo', description: 'last letter' },
              { id: 'alpha', tool: 'echo' },
            ],
          },
          engine: 'test',
        },
        { type: 'step-start', stepId: 'alpha', tool: 'echo', attempt: 1, executionId: 'ex_a1' },
        {
          type: 'tool-call',
          stepId: 'alpha',
          executionId: 'ex_a1',
          attempt: 1,
          tool: 'echo',
          effect: 'read',
          idempotent: true,
          args: {},
        },
        {
          type: 'tool-result',
          stepId: 'alpha',
          executionId: 'ex_a1',
          tool: 'echo',
          status: 'failed',
          error: { code: 'E300', message: 'flaky', retryable: true },
          startedAt: 'then',
          durationMs: 1,
        },
        {
          type: 'step-retry',
          stepId: 'alpha',
          attempt: 1,
          nextAttempt: 2,
          delayMs: 1,
          error: { code: 'E300', message: 'flaky', retryable: true },
        },
        { type: 'step-start', stepId: 'alpha', tool: 'echo', attempt: 2, executionId: 'ex_a2' },
        {
          type: 'tool-call',
          stepId: 'alpha',
          executionId: 'ex_a2',
          attempt: 2,
          tool: 'echo',
          effect: 'read',
          idempotent: true,
          args: {},
        },
        { type: 'step-start', stepId: 'unplanned', tool: 'echo', attempt: 1, executionId: 'ex_u' },
      ]),
    );
    const steps = await store.listSteps(runId);
    expect(steps.map((step) => [step.stepId, step.status, step.attempt])).toEqual([
      ['zeta', 'pending', 0],
      ['alpha', 'running', 2],
      ['unplanned', 'running', 1],
    ]);
    expect(steps[0]?.description).toBe('last letter');
    expect(steps[1]).toMatchObject({ executionId: 'ex_a2', toolCalled: true, idempotent: true });
    const executions = await store.listExecutions(runId, 'alpha');
    expect(executions.map((execution) => [execution.executionId, execution.status, execution.error?.code])).toEqual([
      ['ex_a1', 'failed', 'E300'],
      ['ex_a2', 'running', undefined],
    ]);
    expect(await store.listExecutions(runId, 'zeta')).toEqual([]);
    expect(await store.listSteps('run_missing')).toEqual([]);
    await store.close();
  });

  it('keep the migration list and the schema version in step with the migrations', async () => {
    const { migrations } = await import('../src/migrations.js');
    expect(Object.keys(migrations).sort()).toEqual([...MIGRATION_NAMES]);
    expect(SCHEMA_VERSION).toBe(MIGRATION_NAMES.length);
  });
});
