import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  defineTool,
  ErrorCodes,
  type RunEvent,
  type RunStore,
  readAll,
  type StepResult,
  ToolError,
} from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';

const directory = mkdtempSync(join(tmpdir(), 'stepwise-continue-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** `gate` fails (not retryably) until its file exists, then returns the file's name. */
function engineOn(store: RunStore) {
  const { registry } = createTestTools();
  registry.register(
    defineTool({
      name: 'gate',
      description: 'Succeeds once `file` exists.',
      input: { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] },
      effect: 'read',
      execute: async (input) => {
        const { file } = input as { file: string };
        if (!existsSync(file)) throw new ToolError({ message: `${file} is missing` });
        return { file };
      },
    }),
  );
  return dagEngine({ tools: registry, store, random: () => 0.5 });
}

function statuses(steps: readonly StepResult[]): Record<string, string> {
  return Object.fromEntries(steps.map((step) => [step.stepId, step.status]));
}

let database: string;
let file: string;
let count = 0;
beforeEach(() => {
  count++;
  database = join(directory, `runs-${count}.db`);
  file = join(directory, `gate-${count}`);
});

const planOf = (gateFile: string) =>
  makePlan([
    { id: 'first', tool: 'echo', args: { value: 1 } },
    { id: 'gate', tool: 'gate', args: { file: gateFile }, dependsOn: ['first'] },
    { id: 'uses-gate', tool: 'echo', args: { value: '$gate/file' }, dependsOn: ['gate'] },
    { id: 'after-gate', tool: 'echo', args: { value: 2 }, dependsOn: ['gate'] },
    { id: 'independent', tool: 'echo', args: { value: 3 } },
  ]);

describe('continuing a finished run', () => {
  it('retries a failed step as a new attempt of the same run; its skipped dependents run; the journal keeps both attempts', async () => {
    const store = createSqliteStore({ path: database });
    const failed = await engineOn(store).run(planOf(file)).result;
    expect(failed.status).toBe('failed');
    expect(statuses(failed.steps)).toMatchObject({ gate: 'failed', 'uses-gate': 'skipped', 'after-gate': 'skipped' });
    store.close();

    // Another process (a fresh store on the same file) continues it once the cause is fixed.
    writeFileSync(file, 'ok');
    const reopened = createSqliteStore({ path: database });
    const continued = await engineOn(reopened).resume(failed.runId, {
      retry: ['gate'],
      by: 'ops',
      reason: 'file restored',
    }).result;
    expect(continued.runId).toBe(failed.runId);
    expect(continued.status).toBe('completed');
    expect(statuses(continued.steps)).toEqual({
      first: 'succeeded',
      gate: 'succeeded',
      'uses-gate': 'succeeded',
      'after-gate': 'succeeded',
      independent: 'succeeded',
    });
    expect(continued.steps.find((step) => step.stepId === 'gate')?.attempt).toBe(2);
    expect(continued.steps.find((step) => step.stepId === 'uses-gate')?.output).toEqual({ value: file });

    const events = await readAll(reopened, failed.runId);
    const gateEnds = events.filter(
      (event): event is Extract<RunEvent, { type: 'step-end' }> => event.type === 'step-end' && event.stepId === 'gate',
    );
    expect(gateEnds.map((event) => [event.result.attempt, event.result.status])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    const kinds = events.map((event) => event.type);
    expect(kinds.filter((kind) => kind === 'run-end')).toHaveLength(2);
    const continueEvent = events.find((event) => event.type === 'run-continue');
    expect(continueEvent).toMatchObject({
      from: 'failed',
      retry: ['gate'],
      skip: [],
      by: 'ops',
      reason: 'file restored',
    });
    expect(kinds.indexOf('run-continue')).toBeGreaterThan(kinds.indexOf('run-end'));
    // `first` and `independent` did not run again.
    expect(events.filter((event) => event.type === 'step-start' && event.stepId === 'first')).toHaveLength(1);
    expect(foldRun(events).status).toBe('completed');
    expect((await reopened.getRun(failed.runId))?.status).toBe('completed');
    reopened.close();
  });

  it('skips a failed step: dependents that only wait for it run, dependents that read its output are skipped (E310)', async () => {
    const store = createSqliteStore({ path: database });
    const engine = engineOn(store);
    const failed = await engine.run(planOf(file)).result;
    expect(failed.status).toBe('failed');
    const continued = await engine.resume(failed.runId, { skip: ['gate'], reason: 'not needed today' }).result;
    const gate = continued.steps.find((step) => step.stepId === 'gate');
    expect(gate?.status).toBe('skipped');
    expect(gate?.error?.message).toBe(`skipped by a person (not needed today): ${file} is missing`);
    expect(gate?.error?.code).toBe(ErrorCodes.TOOL_FAILED);
    expect(statuses(continued.steps)).toMatchObject({ 'after-gate': 'succeeded', 'uses-gate': 'skipped' });
    expect(continued.steps.find((step) => step.stepId === 'uses-gate')?.error?.code).toBe(ErrorCodes.DEPENDENCY_FAILED);
    expect(continued.status).toBe('partial');
    // The failed attempt stays in the journal beside the skip.
    const ends = (await readAll(store, failed.runId)).filter(
      (event) => event.type === 'step-end' && event.stepId === 'gate',
    );
    expect(ends.map((event) => (event as Extract<RunEvent, { type: 'step-end' }>).result.status)).toEqual([
      'failed',
      'skipped',
    ]);
    store.close();
  });

  it('a cancelled run resumes: its cancelled steps run, what succeeded does not run again', async () => {
    const store = createSqliteStore({ path: database });
    const { registry } = createTestTools();
    const engine = dagEngine({ tools: registry, store, concurrency: 1 });
    const plan = makePlan([
      { id: 'quick', tool: 'echo', args: { value: 1 } },
      { id: 'slow', tool: 'sleep', args: { ms: 300 }, dependsOn: ['quick'] },
      { id: 'last', tool: 'echo', args: { value: 2 }, dependsOn: ['slow'] },
    ]);
    const handle = engine.run(plan, {
      onEvent: (event) => {
        if (event.type === 'step-start' && event.stepId === 'slow') handle.cancel('stop for now');
      },
    });
    const cancelled = await handle.result;
    expect(cancelled.status).toBe('cancelled');
    expect(statuses(cancelled.steps)).toEqual({ quick: 'succeeded', slow: 'cancelled', last: 'cancelled' });

    const continued = await engine.resume(cancelled.runId).result;
    expect(continued.status).toBe('completed');
    const events = await readAll(store, cancelled.runId);
    expect(events.filter((event) => event.type === 'step-start' && event.stepId === 'quick')).toHaveLength(1);
    expect(events.find((event) => event.type === 'run-continue')).toMatchObject({
      from: 'cancelled',
      retry: [],
      skip: [],
    });
    expect(continued.steps.find((step) => step.stepId === 'slow')?.attempt).toBe(2);
    store.close();
  });

  it('refuses to continue what cannot be continued, with E004 and the step as location', async () => {
    const store = createSqliteStore({ path: database });
    const engine = engineOn(store);
    const failed = await engine.run(planOf(file)).result;
    const refusal = (options: Parameters<typeof engine.resume>[1]) =>
      engine.resume(failed.runId, options).result.then(
        () => undefined,
        (error: { code: string; location: string }) => ({ code: error.code, location: error.location }),
      );
    expect(await refusal({ retry: ['nope'] })).toEqual({ code: ErrorCodes.INPUT_INVALID, location: 'nope' });
    expect(await refusal({ retry: ['first'] })).toEqual({ code: ErrorCodes.INPUT_INVALID, location: 'first' });
    expect(await refusal({ retry: ['gate'], skip: ['gate'] })).toEqual({
      code: ErrorCodes.INPUT_INVALID,
      location: 'gate',
    });
    // Nothing was journaled by the refusals, and the lease is free for a real continuation.
    expect((await readAll(store, failed.runId)).some((event) => event.type === 'run-continue')).toBe(false);
    writeFileSync(file, 'ok');
    const completed = await engine.resume(failed.runId, { retry: ['gate'] }).result;
    expect(completed.status).toBe('completed');
    expect(await refusal({ retry: ['gate'] })).toEqual({ code: ErrorCodes.INPUT_INVALID, location: failed.runId });
    // Without options an ended run still replays its recorded result.
    expect((await engine.resume(failed.runId).result).status).toBe('completed');
    store.close();
  });
});
