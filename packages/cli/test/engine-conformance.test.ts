import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  approvePlan,
  ErrorCodes,
  type Plan,
  type RunEvent,
  type RunResult,
  type RunStore,
  readAll,
  StepwiseError,
} from '@stepwise/core';
import { createTestTools, MemoryStore, makePlan } from '@stepwise/core/testing';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM fixture shared with the child process, no types
import { ENGINES, engineFor } from './fixtures/engine-conformance-engines.mjs';

/**
 * The same scenarios against all three engines. Where the engines' promises differ (the strict
 * engine stops at any failure and leaves unstarted steps out of its result), the expectation says so.
 */
type EngineName = 'sequential' | 'dag' | 'agentic';
interface AnyEngine {
  run(plan: Plan, options?: Record<string, unknown>): { result: Promise<RunResult>; cancel(reason?: string): void };
  resume(runId: string): { result: Promise<RunResult> };
}

const here = fileURLToPath(new URL('.', import.meta.url));
const directory = mkdtempSync(join(tmpdir(), 'stepwise-conformance-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function setup(name: EngineName, store: RunStore = new MemoryStore()) {
  const tools = createTestTools();
  const engine = engineFor(name, { store, tools: tools.registry }) as AnyEngine;
  const run = (plan: Plan, options: Record<string, unknown> = {}) =>
    engine.run(
      plan,
      name === 'sequential' ? { ...options, authorization: approvePlan(plan, { by: 'test' }) } : options,
    );
  return { tools, engine, store, run };
}

const statuses = (result: RunResult) => Object.fromEntries(result.steps.map((step) => [step.stepId, step.status]));

describe.each(ENGINES as EngineName[])('engine conformance: %s', (name) => {
  it('bad plan: run() throws a typed E001 listing every problem, before anything is journaled', async () => {
    const { run, store, tools } = setup(name);
    const plan = makePlan([
      { id: 'a', tool: 'no_such_tool', args: {} },
      { id: 'b', tool: 'echo', args: {}, dependsOn: ['ghost'] },
    ]);
    let thrown: unknown;
    try {
      run(plan);
    } catch (error) {
      thrown = error;
    }
    expect(StepwiseError.isInstance(thrown)).toBe(true);
    expect((thrown as StepwiseError).code).toBe(ErrorCodes.PLAN_INVALID);
    const paths = (((thrown as StepwiseError).details?.problems ?? []) as { path: string }[]).map(
      (problem) => problem.path,
    );
    expect(paths).toEqual(expect.arrayContaining(['/steps/0/tool', '/steps/1/dependsOn/0']));
    expect(await store.listRuns()).toEqual([]);
    expect(tools.log.count()).toBe(0);
  });

  it('critical failure: the run fails and no later step starts', async () => {
    const { run, tools } = setup(name);
    const result = await run(
      makePlan([
        { id: 'a', tool: 'echo', args: { value: 1 } },
        { id: 'b', tool: 'fail', args: {} },
        { id: 'c', tool: 'echo', args: { value: 3 } },
      ]),
    ).result;
    expect(result.status).toBe('failed');
    expect(tools.log.calls.map((call) => call.stepId)).toEqual(['a', 'b']);
    const expected =
      name === 'sequential' ? { a: 'succeeded', b: 'failed' } : { a: 'succeeded', b: 'failed', c: 'cancelled' };
    expect(statuses(result)).toEqual(expected);
  });

  it('non-critical failure: dependents skipped, independents continue (strict: stops anyway)', async () => {
    const { run, tools } = setup(name);
    const result = await run(
      makePlan([
        { id: 'a', tool: 'fail', args: {}, critical: false },
        { id: 'b', tool: 'echo', args: {}, dependsOn: ['a'] },
        { id: 'c', tool: 'echo', args: {} },
      ]),
    ).result;
    if (name === 'sequential') {
      expect(result.status).toBe('failed');
      expect(statuses(result)).toEqual({ a: 'failed' });
      expect(tools.log.count('echo')).toBe(0);
    } else {
      expect(result.status).toBe('partial');
      expect(statuses(result)).toEqual({ a: 'failed', b: 'skipped', c: 'succeeded' });
      expect(result.steps[1]?.error?.code).toBe(ErrorCodes.DEPENDENCY_FAILED);
      expect(tools.log.calls.map((call) => call.stepId)).toEqual(['a', 'c']);
    }
  });

  it('cancel: the running step ends cancelled (E307) and nothing after it starts', async () => {
    const { run, tools } = setup(name);
    const handle = run(
      makePlan([
        { id: 'slow', tool: 'sleep', args: { ms: 10_000 } },
        { id: 'after', tool: 'echo', args: {}, dependsOn: ['slow'] },
      ]),
    );
    while (tools.log.count('sleep') === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    handle.cancel('the host stopped it');
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(result.steps[0]).toMatchObject({
      stepId: 'slow',
      status: 'cancelled',
      error: { code: ErrorCodes.STEP_CANCELLED },
    });
    expect(tools.log.count('echo')).toBe(0);
    expect(['skipped', 'cancelled', undefined]).toContain(statuses(result).after);
  });

  it('SIGKILL + resume, with two resumers contending for the lease: one wins, nothing finished runs twice', {
    timeout: 60_000,
  }, async () => {
    const databasePath = join(directory, `${name}.db`);
    const sideFile = join(directory, `${name}.side`);
    const blockFile = join(directory, `${name}.block`);
    writeFileSync(sideFile, '');
    writeFileSync(blockFile, '');
    const child: ChildProcess = spawn(
      process.execPath,
      [join(here, 'fixtures', 'engine-conformance-child.mjs'), name, databasePath, sideFile, blockFile],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout?.on('data', (chunk) => (output += String(chunk)));
    child.stderr?.on('data', (chunk) => (output += String(chunk)));
    const exited = once(child, 'exit');
    const deadline = Date.now() + 30_000;
    while (!existsSync(`${blockFile}.held`)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`the child did not reach "hold": ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    child.kill('SIGKILL');
    expect((await exited)[1]).toBe('SIGKILL');
    rmSync(blockFile);

    const store = createSqliteStore({ path: databasePath });
    try {
      const [summary] = await store.listRuns();
      const runId = summary?.runId as string;
      expect(summary?.status).toBe('running');
      // The dead child's lease (400 ms) must run out before anyone may take the run.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const engines = [0, 1].map(() => engineFor(name, { store, sideFile }) as AnyEngine);
      const outcomes = await Promise.allSettled(engines.map((engine) => engine.resume(runId).result));
      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled') as PromiseFulfilledResult<RunResult>[];
      const lost = outcomes.filter((outcome) => outcome.status === 'rejected') as PromiseRejectedResult[];
      expect(won).toHaveLength(1);
      expect(lost.map((outcome) => (outcome.reason as StepwiseError).code)).toEqual([ErrorCodes.LEASE_CONFLICT]);
      expect(won[0]?.value.status).toBe('completed');

      const invocations = readFileSync(sideFile, 'utf8').trim().split('\n');
      // first and second finished before the kill: never again. hold was in flight and is idempotent: once more.
      expect(invocations).toEqual(['first 1', 'second 1', 'hold 1', 'hold 2', 'last 1']);
      const events = await readAll(store, runId);
      expect(events.filter((event) => event.type === 'run-resume')).toHaveLength(1);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    } finally {
      await store.close();
    }
  });
});

describe('goal steps under the dag engine and the agentic engine', () => {
  it('a plan mixing tool steps and goal steps journals the same events under both', async () => {
    const { goalStepExecutor, heuristicEstimator } = await import('@stepwise/engine-agentic');
    const { complete, scriptedModel, toolCall } = await import('@stepwise/engine-agentic/testing');
    const { dagEngine } = await import('@stepwise/engine-dag');
    const { agenticEngine } = await import('@stepwise/engine-agentic');
    const plan = makePlan([
      { id: 'read', tool: 'echo', args: { value: 'input' } },
      { id: 'think', description: 'Echo the input once, then complete', dependsOn: ['read'] },
      { id: 'write', tool: 'note', args: { text: 'done' }, dependsOn: ['think'] },
    ]);
    const script = () => scriptedModel([toolCall('echo', { value: 'from the model' }), complete('echoed')]);
    const approvals = { policy: { effects: { write: 'auto' as const } } };
    const shape = (events: RunEvent[]) =>
      events.map((event) => [event.type, 'stepId' in event ? event.stepId : '', event.seq]);

    const dagTools = createTestTools();
    const dagEvents: RunEvent[] = [];
    const dag = dagEngine({
      tools: dagTools.registry,
      approvals,
      concurrency: 1,
      goalSteps: goalStepExecutor({ model: script(), tokenEstimator: heuristicEstimator }),
      onEvent: (event) => dagEvents.push(event),
    });
    const agenticTools = createTestTools();
    const agenticEvents: RunEvent[] = [];
    const agentic = agenticEngine({
      tools: agenticTools.registry,
      approvals,
      model: script(),
      tokenEstimator: heuristicEstimator,
      onEvent: (event) => agenticEvents.push(event),
    });
    const [underDag, underAgentic] = await Promise.all([dag.run(plan).result, agentic.run(plan).result]);
    expect(underDag.status).toBe('completed');
    expect(underAgentic.status).toBe('completed');
    expect(shape(dagEvents)).toEqual(shape(agenticEvents));
    expect(dagEvents.some((event) => event.type === 'model-call')).toBe(true);
    expect(dagTools.log.calls.map((call) => call.stepId)).toEqual(['read', 'think', 'write']);
    expect(agenticTools.log.calls.map((call) => call.stepId)).toEqual(dagTools.log.calls.map((call) => call.stepId));
    // Without a goal-step executor the dag engine refuses the goal step before anything runs.
    expect(() => dagEngine({ tools: dagTools.registry }).run(plan)).toThrow(
      expect.objectContaining({ code: ErrorCodes.PLAN_INVALID }),
    );
  });
});
