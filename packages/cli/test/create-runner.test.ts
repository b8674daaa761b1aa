import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { approvePlan, ErrorCodes, type Plan, type RunStore, readAll, StepwiseError } from '@stepwise/core';
import { complete, scriptedModel, toolCall } from '@stepwise/engine-agentic/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRunner, openSqliteStore, type RunnerOptions } from '../src/create-runner.js';
import { createWorkspace, FIXTURES } from './helpers.js';

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let workspace: Workspace;
let store: RunStore;
let counterFile: string;

/** One store shared by several runners; only the test closes it. */
function shared(inner: RunStore): RunStore {
  return {
    append: (runId, events, lease) => inner.append(runId, events, lease),
    read: (runId, afterSeq) => inner.read(runId, afterSeq),
    getRun: (runId) => inner.getRun(runId),
    listRuns: (filter) => inner.listRuns(filter),
    getExecution: (id) => inner.getExecution(id),
    acquireLease: (runId, owner, ttl) => inner.acquireLease(runId, owner, ttl),
    renewLease: (lease) => inner.renewLease(lease),
    releaseLease: (lease) => inner.releaseLease(lease),
    close: async () => undefined,
  };
}

beforeEach(async () => {
  workspace = await createWorkspace();
  counterFile = path.join(workspace.directory, 'calls.log');
  store = await openSqliteStore(path.join(workspace.directory, '.stepwise', 'stepwise.db'));
});
afterEach(async () => {
  await store.close();
  await workspace.dispose();
});

const plan: Plan = {
  id: 'engines',
  goal: 'Show what each engine does with a failure',
  steps: [
    { id: 'first', tool: 'sleep_ms', args: { ms: 5, label: 'first' } },
    {
      id: 'fails',
      tool: 'sleep_ms',
      args: { ms: 200, label: 'fails' },
      timeoutMs: 20,
      retry: { maxAttempts: 1 },
      critical: false,
    },
    { id: 'independent', tool: 'sleep_ms', args: { ms: 5, label: 'independent' } },
  ],
};

function options(engine: RunnerOptions['engine']): RunnerOptions {
  return {
    engine,
    workspace: workspace.directory,
    tools: [{ module: path.join(FIXTURES, 'test-plugin.mjs'), options: { counterFile } }],
    store: shared(store),
    model: scriptedModel([]),
  };
}

async function calls(): Promise<string[]> {
  const text = await readFile(counterFile, 'utf8').catch(() => '');
  await rm(counterFile, { force: true });
  return text.split('\n').filter((line) => line.startsWith('start '));
}

describe('createRunner: the engine is one word of configuration', () => {
  it('runs the same plan with the same tools and store through each engine, with the documented differences', async () => {
    // Strict: needs an authorization, stops at the first failure.
    const strict = await createRunner(options('sequential'));
    expect(strict.engineName).toBe('sequential');
    const unauthorized = await (async () => {
      try {
        await strict.run(plan).result;
      } catch (error) {
        return error;
      }
    })();
    expect(StepwiseError.isInstance(unauthorized) && unauthorized.code).toBe(ErrorCodes.NOT_AUTHORIZED);
    const strictResult = await strict.run(plan, { authorization: approvePlan(plan, { by: 'test' }) }).result;
    await strict.close();
    expect(strictResult.status).toBe('failed');
    expect(strictResult.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['first', 'succeeded'],
      ['fails', 'failed'],
    ]);
    expect(strictResult.steps[1]?.error?.code).toBe(ErrorCodes.STEP_TIMEOUT);
    expect(await calls()).toEqual(['start first', 'start fails']);

    // Permissive: no authorization needed, the independent step still runs.
    const permissive = await createRunner(options('dag'));
    const dagResult = await permissive.run(plan).result;
    await permissive.close();
    expect(dagResult.status).toBe('partial');
    expect(Object.fromEntries(dagResult.steps.map((step) => [step.stepId, step.status]))).toEqual({
      first: 'succeeded',
      fails: 'failed',
      independent: 'succeeded',
    });
    expect((await calls()).sort()).toEqual(['start fails', 'start first', 'start independent']);

    // Agentic: steps with a tool run directly, with the dag engine's failure rules.
    const agentic = await createRunner(options('agentic'));
    const agenticResult = await agentic.run(plan).result;
    await agentic.close();
    expect(agenticResult.status).toBe('partial');
    expect(agenticResult.steps.find((step) => step.stepId === 'independent')?.status).toBe('succeeded');

    // One journal holds all three runs, each tagged with its engine.
    const runs = await store.listRuns({ planId: 'engines' });
    expect(runs.map((run) => run.engine).sort()).toEqual(['agentic', 'dag', 'sequential']);
  });

  it('validates for its engine: the strict one refuses references', async () => {
    const withReference: Plan = {
      id: 'refs',
      steps: [
        { id: 'a', tool: 'sleep_ms', args: { ms: 1 } },
        { id: 'b', tool: 'sleep_ms', args: { ms: { $ref: 'a', pointer: '/slept' } }, dependsOn: ['a'] },
      ],
    };
    const strict = await createRunner(options('sequential'));
    const permissive = await createRunner(options('dag'));
    try {
      expect(strict.validate(withReference).ok).toBe(false);
      expect(strict.validate(withReference).problems.map((problem) => problem.kind)).toContain('reference-forbidden');
      expect(permissive.validate(withReference).ok).toBe(true);
      expect(permissive.validate({ id: 'x', steps: [{ id: 'a', tool: 'nope' }] }).problems[0]?.code).toBe(
        ErrorCodes.TOOL_UNKNOWN,
      );
    } finally {
      await strict.close();
      await permissive.close();
    }
  });

  it('runs agentic goal steps with the configured model, through the same tools', async () => {
    const model = scriptedModel([toolCall('sleep_ms', { ms: 1, label: 'model-call' }), complete('slept')]);
    const runner = await createRunner({ ...options('agentic'), model });
    try {
      const result = await runner.run({
        id: 'goal',
        steps: [{ id: 'nap', description: 'Take a short nap with sleep_ms' }],
      }).result;
      expect(result.status).toBe('completed');
      expect(model.calls).toBe(2);
      expect(await calls()).toEqual(['start model-call']);
      const events = await readAll(runner.store, result.runId);
      expect(events.filter((event) => event.type === 'model-call')).toHaveLength(2);
    } finally {
      await runner.close();
    }
  });

  it('refuses the agentic engine without a model, and cleans up what it started', async () => {
    const { model: _model, ...rest } = options('agentic');
    const error = await createRunner(rest).catch((thrown: unknown) => thrown);
    expect(StepwiseError.isInstance(error) && error.code).toBe(ErrorCodes.CONFIG_INVALID);
  });

  it('close() disposes plugins and closes the store it was given', async () => {
    let disposed = 0;
    let closed = 0;
    const runner = await createRunner({
      engine: 'dag',
      workspace: workspace.directory,
      tools: [{ name: 'empty', tools: [], dispose: () => void disposed++ }],
      store: { ...shared(store), close: async () => void closed++ },
    });
    await runner.close();
    await runner.close();
    expect([disposed, closed]).toEqual([1, 1]);
  });
});
