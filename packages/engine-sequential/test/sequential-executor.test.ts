import { defineTool, ErrorCodes, type RunStore, type StepResult } from '@stepwise/core';
import { deriveRunId } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSequentialExecutor, type ExecutorState } from '../src/index.js';
import { removeTempDirectories, storeVariants, tempDirectory } from './support/stores.js';
import { approve, createSeedTools, echoPlan } from './support/tools.js';

afterAll(removeTempDirectories);

const invariant = (state: ExecutorState) => expect(state.completedSteps.length).toBe(state.currentStep);

describe.each(storeVariants)('executor state machine on $name', (variant) => {
  let store: RunStore;
  beforeEach(async () => {
    store = await variant.open();
  });
  afterEach(async () => {
    await store.close();
  });

  const setup = (extra: Partial<Parameters<typeof createSequentialExecutor>[0]> = {}) => {
    const tools = createSeedTools(tempDirectory());
    const executor = createSequentialExecutor({ tools: tools.registry, store, ...extra });
    return { ...tools, executor };
  };

  it('moves idle → plan-loaded → step-running (n of m) → completed, one executeStep at a time', async () => {
    const seen: ExecutorState[] = [];
    const { executor, log } = setup({
      onStepStart: () => seen.push(executor.state),
      onStepComplete: () => seen.push(executor.state),
    });
    expect(executor.state).toMatchObject({ status: 'idle', currentStep: 0, totalSteps: 0, completedSteps: [] });

    const plan = echoPlan(3);
    const authorization = approve(plan);
    const loaded = executor.load(plan, authorization);
    expect(loaded).toMatchObject({ status: 'plan-loaded', runId: deriveRunId(authorization), planId: plan.id });
    expect(loaded).toMatchObject({ currentStep: 0, totalSteps: 3 });
    expect(executor.runId).toBe(deriveRunId(authorization));
    // Loading validates and authorizes; nothing is journaled until a step is asked for.
    expect(await store.listRuns()).toEqual([]);

    const first = await executor.executeStep();
    expect(first).toMatchObject({ stepId: 's1', status: 'succeeded' });
    expect(executor.state).toMatchObject({ status: 'step-running', currentStep: 1, stepId: 's2', running: false });
    expect(log.count()).toBe(1);

    await executor.executeStep();
    expect(executor.state).toMatchObject({ status: 'step-running', currentStep: 2, totalSteps: 3, stepId: 's3' });

    const last = await executor.executeStep();
    expect(last?.stepId).toBe('s3');
    const done = executor.state;
    expect(done.status).toBe('completed');
    expect(done.currentStep).toBe(3);
    expect(done.status === 'completed' && done.result.status).toBe('completed');
    expect(done.status === 'completed' && done.replayed).toBe(false);
    expect(await executor.result).toEqual(done.status === 'completed' ? done.result : undefined);

    // Over is over: another call runs nothing.
    expect(await executor.executeStep()).toBeUndefined();
    expect(log.count()).toBe(3);

    expect(
      seen.map((state) => [state.status, state.currentStep, state.status === 'step-running' && state.running]),
    ).toEqual([
      ['step-running', 0, true],
      ['step-running', 1, false],
      ['step-running', 1, true],
      ['step-running', 2, false],
      ['step-running', 2, true],
      ['completed', 3, false],
    ]);
    for (const state of [...seen, loaded, done]) invariant(state);
  });

  it('moves to failed at the first failing step, with the invariant intact', async () => {
    const failed: StepResult[] = [];
    const { executor } = setup({ onStepFailed: (result) => failed.push(result) });
    const plan = makePlan([
      { id: 'a', tool: 'echo', args: {} },
      { id: 'b', tool: 'fail', args: { message: 'splice: symbol not found' } },
      { id: 'c', tool: 'echo', args: {} },
    ]);
    executor.load(plan, approve(plan));
    const result = await executor.execute();
    const state = executor.state;
    expect(state).toMatchObject({ status: 'failed', currentStep: 1, totalSteps: 3 });
    invariant(state);
    if (state.status !== 'failed') throw new Error('unreachable');
    expect(state.failedStep).toMatchObject({ stepId: 'b', error: { message: 'splice: symbol not found' } });
    expect(state.result).toEqual(result);
    expect(failed.map((step) => step.stepId)).toEqual(['b']);
    expect(result.steps.map((step) => step.stepId)).toEqual(['a', 'b']);
  });

  it('passes each callback its step and position, in order', async () => {
    const calls: string[] = [];
    const { executor } = setup({
      onStepStart: (step, position) => calls.push(`start ${step.id} ${position.index}/${position.total}`),
      onStepComplete: (result, position) => calls.push(`complete ${result.stepId} ${position.index}`),
      onStepFailed: (result, position) => calls.push(`failed ${result.stepId} ${position.index}`),
    });
    const plan = makePlan([
      { id: 'x', tool: 'echo', args: {} },
      { id: 'y', tool: 'fail', args: {} },
    ]);
    executor.load(plan, approve(plan));
    await executor.execute();
    expect(calls).toEqual(['start x 0/2', 'complete x 0', 'start y 1/2', 'failed y 1']);
  });

  it('survives a callback that throws, and logs it', async () => {
    const warnings: string[] = [];
    const { executor, log } = setup({
      onStepStart: () => {
        throw new Error('display bug');
      },
      log: (level, message) => warnings.push(`${level}: ${message}`),
    });
    const plan = echoPlan(2);
    executor.load(plan, approve(plan));
    expect((await executor.execute()).status).toBe('completed');
    expect(log.count()).toBe(2);
    expect(warnings).toContain('warn: onStepStart callback threw; the run continues');
  });

  it('continues with execute() after some executeStep() calls', async () => {
    const { executor, log } = setup();
    const plan = echoPlan(4);
    executor.load(plan, approve(plan));
    await executor.executeStep();
    const result = await executor.execute();
    expect(result.steps.map((step) => step.stepId)).toEqual(['s1', 's2', 's3', 's4']);
    expect(log.calls.map((call) => call.stepId)).toEqual(['s1', 's2', 's3', 's4']);
  });

  it('never runs two steps at once, even when executeStep is called concurrently', async () => {
    const tools = createSeedTools(tempDirectory());
    let active = 0;
    let peak = 0;
    const order: string[] = [];
    tools.registry.register(
      defineTool({
        name: 'slow',
        description: 'Takes a few milliseconds.',
        input: z.object({}),
        effect: 'read',
        execute: async (_input, context) => {
          active++;
          peak = Math.max(peak, active);
          order.push(context.stepId);
          await new Promise((resolve) => setTimeout(resolve, 5));
          active--;
          return {};
        },
      }),
    );
    const executor = createSequentialExecutor({ tools: tools.registry, store });
    const plan = makePlan(['a', 'b', 'c', 'd'].map((id) => ({ id, tool: 'slow', args: {} })));
    executor.load(plan, approve(plan));
    const results = await Promise.all([executor.executeStep(), executor.executeStep(), executor.execute()]);
    expect(peak).toBe(1);
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    expect(results[0]?.stepId).toBe('a');
    expect((results[1] as StepResult).stepId).toBe('b');
  });

  it('returns frozen snapshots: a held state does not change under the caller', async () => {
    const { executor } = setup();
    const plan = echoPlan(2);
    executor.load(plan, approve(plan));
    const before = executor.state;
    await executor.executeStep();
    expect(before.status).toBe('plan-loaded');
    expect(before.completedSteps).toEqual([]);
    expect(Object.isFrozen(executor.state)).toBe(true);
    expect(executor.state).toBe(executor.state);
  });

  it('refuses to execute without a loaded plan (E002) and to load a second plan (E601)', async () => {
    const { executor } = setup();
    await expect(executor.executeStep()).rejects.toMatchObject({ code: ErrorCodes.NOT_AUTHORIZED });
    await expect(executor.execute()).rejects.toMatchObject({ code: ErrorCodes.NOT_AUTHORIZED });
    expect(() => executor.handle()).toThrow(expect.objectContaining({ code: ErrorCodes.NOT_AUTHORIZED }));
    const plan = echoPlan(1);
    executor.load(plan, approve(plan));
    expect(() => executor.load(plan, approve(plan))).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID }),
    );
  });

  it('stays idle when load rejects the plan', () => {
    const { executor } = setup();
    const plan = echoPlan(1);
    expect(() => executor.load(plan, undefined)).toThrow(expect.objectContaining({ code: ErrorCodes.NOT_AUTHORIZED }));
    expect(executor.state.status).toBe('idle');
    expect(executor.runId).toBeUndefined();
  });

  it('reports a replay in its state when the approved plan already ran', async () => {
    const first = setup();
    const plan = echoPlan(2);
    const authorization = approve(plan);
    first.executor.load(plan, authorization);
    const original = await first.executor.execute();

    const second = setup();
    second.executor.load(plan, authorization);
    expect(await second.executor.executeStep()).toBeUndefined();
    const state = second.executor.state;
    expect(state).toMatchObject({ status: 'completed', replayed: true, currentStep: 2 });
    expect(state.completedSteps).toEqual(original.steps);
    expect(second.log.count()).toBe(0);
  });
});
