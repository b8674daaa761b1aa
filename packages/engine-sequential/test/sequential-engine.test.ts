import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ErrorCodes,
  type Plan,
  type RunEvent,
  type RunResult,
  type RunStore,
  readAll,
  type StepResult,
} from '@stepwise/core';
import { deriveRunId } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sequentialEngine } from '../src/index.js';
import { removeTempDirectories, storeVariants, tempDirectory } from './support/stores.js';
import { approve, createSeedTools, echoPlan, stepIdsCalled } from './support/tools.js';

afterAll(removeTempDirectories);

/** The seed's Appendix A plan, in Stepwise's vocabulary. */
function seedPlan(): Plan {
  return makePlan(
    [
      {
        id: 'step_1',
        tool: 'file_read',
        args: { path: 'src/lib.rs' },
        preconditions: [{ kind: 'file_exists', path: 'src/lib.rs' }],
        description: 'read the library',
      },
      {
        id: 'step_2',
        tool: 'splice_patch',
        args: { file: 'src/lib.rs', symbol: 'old_function', with: 'patches/fix.rs' },
        requiresApproval: true,
      },
      { id: 'step_3', tool: 'echo', args: { value: 'lsp_check .' } },
    ],
    { id: 'plan_001', intent: 'MUTATE', goal: 'patch old_function' },
  );
}

const sum = (steps: readonly StepResult[]) => steps.reduce((total, step) => total + step.durationMs, 0);

async function collect(iterable: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

describe.each(storeVariants)('sequential engine on $name', (variant) => {
  let store: RunStore;
  let workspace: string;

  beforeEach(async () => {
    store = await variant.open();
    workspace = tempDirectory();
    writeFileSync(join(workspace, 'lib.rs'), 'fn old_function() {}');
  });
  afterEach(async () => {
    await store.close();
  });

  const setup = (approvals: { handler?: (request: { stepId: string }) => Promise<boolean> } = {}) => {
    const tools = createSeedTools(workspace);
    const engine = sequentialEngine({ tools: tools.registry, store, workspace, approvals });
    return { ...tools, engine };
  };
  // The seed plan's first step requires src/lib.rs.
  const withSourceTree = () => {
    const source = join(workspace, 'src');
    mkdirSync(source, { recursive: true });
    writeFileSync(join(source, 'lib.rs'), 'fn old_function() {}');
  };

  it('runs a full plan in order: every step succeeds, durationMs is the sum of step durations', async () => {
    withSourceTree();
    const asked: string[] = [];
    const { engine, log } = setup({
      handler: async (request) => {
        asked.push(request.stepId);
        return true;
      },
    });
    const plan = seedPlan();
    const authorization = approve(plan);
    const result = await engine.run(plan, { authorization }).result;
    expect(result.status).toBe('completed');
    expect(result.runId).toBe(deriveRunId(authorization));
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['step_1', 'succeeded'],
      ['step_2', 'succeeded'],
      ['step_3', 'succeeded'],
    ]);
    expect(stepIdsCalled(log)).toEqual(['step_1', 'step_2', 'step_3']);
    expect(asked).toEqual(['step_2']);
    expect(result.durationMs).toBeCloseTo(sum(result.steps), 6);
    expect(result.steps[0]?.output).toEqual({ path: 'src/lib.rs' });
    const summary = await store.getRun(result.runId);
    expect(summary?.status).toBe('completed');
    expect(summary?.engine).toBe('sequential');
  });

  it('stops at a tool failure at step N: later steps are not executed', async () => {
    const { engine, log } = setup();
    const plan = makePlan([
      { id: 'a', tool: 'echo', args: { value: 1 } },
      { id: 'b', tool: 'file_read', args: { path: 'missing.rs' } },
      { id: 'c', tool: 'note', args: { text: 'never' } },
    ]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.status).toBe('failed');
    expect(result.steps.map((step) => step.status)).toEqual(['succeeded', 'failed']);
    expect(result.steps[1]?.error).toMatchObject({
      code: ErrorCodes.TOOL_NOT_FOUND,
      message: 'missing.rs: no such file',
    });
    expect(stepIdsCalled(log)).toEqual(['a', 'b']);
    expect(log.count('note')).toBe(0);
    const events = await readAll(store, result.runId);
    expect(events.filter((event) => event.type === 'step-start').map((event) => event.stepId)).toEqual(['a', 'b']);
  });

  it('stops at a failure at step 1: nothing after it runs', async () => {
    const { engine, log } = setup();
    const plan = makePlan([
      { id: 'first', tool: 'fail', args: { message: 'boom' } },
      { id: 'second', tool: 'echo', args: {} },
      { id: 'third', tool: 'echo', args: {} },
    ]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.status).toBe('failed');
    expect(result.steps).toHaveLength(1);
    expect(result.steps[0]).toMatchObject({
      stepId: 'first',
      status: 'failed',
      error: { code: 'E300', message: 'boom' },
    });
    expect(stepIdsCalled(log)).toEqual(['first']);
  });

  it('fails a step whose precondition does not hold without calling its tool (E101)', async () => {
    const { engine, log } = setup();
    const plan = makePlan([
      {
        id: 'ok',
        tool: 'file_read',
        args: { path: 'lib.rs' },
        preconditions: [{ kind: 'file_exists', path: 'lib.rs' }],
      },
      {
        id: 'guarded',
        tool: 'file_read',
        args: { path: 'nope.rs' },
        preconditions: [{ kind: 'file_exists', path: 'nope.rs' }],
      },
      { id: 'after', tool: 'echo', args: {} },
    ]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.status).toBe('failed');
    expect(result.steps[1]).toMatchObject({
      stepId: 'guarded',
      status: 'failed',
      error: { code: ErrorCodes.PRECONDITION_FILE, location: 'guarded/preconditions/0' },
    });
    expect(stepIdsCalled(log)).toEqual(['ok']);
    // No tool-call was journaled for the guarded step: the tool never started.
    const events = await readAll(store, result.runId);
    expect(events.some((event) => event.type === 'tool-call' && event.stepId === 'guarded')).toBe(false);
  });

  it('fails a step whose precondition kind has no checker (E104), tool not called', async () => {
    const { engine, log } = setup();
    const plan = makePlan([
      { id: 'x', tool: 'echo', args: {}, preconditions: [{ kind: 'symbol_exists', symbol: 'old_function' }] },
    ]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.PRECONDITION_OTHER);
    expect(log.count()).toBe(0);
  });

  it('stops when the confirmation is denied: the step is denied (E401) and nothing after it runs', async () => {
    withSourceTree();
    const asked: string[] = [];
    const { engine, log } = setup({
      handler: async (request) => {
        asked.push(request.stepId);
        return false;
      },
    });
    const plan = seedPlan();
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.status).toBe('failed');
    expect(result.steps.map((step) => step.status)).toEqual(['succeeded', 'denied']);
    expect(result.steps[1]?.error?.code).toBe(ErrorCodes.APPROVAL_DENIED);
    expect(asked).toEqual(['step_2']);
    expect(stepIdsCalled(log)).toEqual(['step_1']);
    const events = await readAll(store, result.runId);
    const decision = events.find((event) => event.type === 'approval-decision');
    expect(decision).toMatchObject({ stepId: 'step_2', decision: 'denied', source: 'handler' });
  });

  it('denies a confirmation when there is no one to ask (non-interactive fallback)', async () => {
    const { engine, log } = setup();
    const plan = makePlan([{ id: 'w', tool: 'note', args: { text: 'x' }, requiresApproval: true }]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.steps[0]?.status).toBe('denied');
    expect(log.count()).toBe(0);
  });

  it('passes arguments exactly as written: ../../etc/passwd reaches the tool untouched', async () => {
    const { engine, log } = setup();
    const args = { path: '../../etc/passwd' };
    const plan = makePlan([
      { id: 'p', tool: 'file_read', args },
      { id: 'q', tool: 'echo', args: { value: '$HOME and $$literal', nested: { list: [1, '~/x'] } } },
    ]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(result.status).toBe('completed');
    expect(log.calls[0]?.args).toEqual({ path: '../../etc/passwd' });
    expect(log.calls[1]?.args).toEqual({ value: '$HOME and $$literal', nested: { list: [1, '~/x'] } });
    const record = await store.getExecution(result.steps[0]?.executionId as string);
    expect(record?.args).toEqual({ path: '../../etc/passwd' });
  });

  it('logs every step: the journal has start/end for each step and call/result for each tool call', async () => {
    const { engine } = setup();
    const plan = echoPlan(4);
    const handle = engine.run(plan, { authorization: approve(plan) });
    const [events, result] = await Promise.all([collect(handle), handle.result]);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events[0]?.type).toBe('run-start');
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    for (const step of plan.steps) {
      const types = events.filter((event) => 'stepId' in event && event.stepId === step.id).map((event) => event.type);
      expect(types).toEqual(['step-start', 'tool-call', 'tool-result', 'step-end']);
    }
    expect(await readAll(store, result.runId)).toEqual(events);
  });

  it('answers every audit question through store.getExecution (evidence completeness)', async () => {
    withSourceTree();
    const { engine } = setup({ handler: async () => true });
    const plan = seedPlan();
    const authorization = approve(plan, 'alice');
    const result = await engine.run(plan, { authorization }).result;
    for (const [index, step] of result.steps.entries()) {
      const record = await store.getExecution(step.executionId);
      expect(record, step.stepId).toBeDefined();
      expect(record).toMatchObject({
        executionId: step.executionId,
        runId: result.runId,
        stepId: step.stepId,
        tool: plan.steps[index]?.tool,
        args: plan.steps[index]?.args,
        status: 'succeeded',
        output: step.output,
      });
      expect(Date.parse(record?.startedAt ?? '')).not.toBeNaN();
      expect(Date.parse(record?.finishedAt ?? '')).not.toBeNaN();
      expect(record?.why).toMatchObject({
        planId: 'plan_001',
        planDigest: result.planDigest,
        goal: 'patch old_function',
      });
      expect(record?.why.authorization).toMatchObject({ id: authorization.id, by: 'alice' });
    }
    const first = await store.getExecution(result.steps[0]?.executionId as string);
    expect(first?.why.stepDescription).toBe('read the library');
    expect(first?.artifacts).toEqual([{ kind: 'stdout', content: 'read src/lib.rs' }]);
    const second = await store.getExecution(result.steps[1]?.executionId as string);
    expect(second?.why.approvals).toEqual([expect.objectContaining({ stepId: 'step_2', decision: 'approved' })]);
  });

  it('records a failed execution with its error', async () => {
    const { engine } = setup();
    const plan = makePlan([{ id: 'r', tool: 'file_read', args: { path: 'missing.txt' } }]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    const record = await store.getExecution(result.steps[0]?.executionId as string);
    expect(record).toMatchObject({ status: 'failed', error: { code: ErrorCodes.TOOL_NOT_FOUND } });
  });

  it('is deterministic: a second run of the same approved plan replays it, same ids, no tool runs again', async () => {
    const { engine, log } = setup();
    const plan = echoPlan(3);
    const authorization = approve(plan);
    const first = await engine.run(plan, { authorization }).result;
    const journal = await readAll(store, first.runId);
    expect(log.count()).toBe(3);

    const again = engine.run(plan, { authorization });
    const [events, second] = await Promise.all([collect(again), again.result]);
    expect(second).toEqual(first);
    expect(second.steps.map((step) => step.executionId)).toEqual(first.steps.map((step) => step.executionId));
    expect(log.count()).toBe(3);
    expect(events).toEqual(journal);
    expect(await readAll(store, first.runId)).toEqual(journal);
    expect(await store.listRuns()).toHaveLength(1);

    // A fresh engine over the same store replays too: the store, not the engine, remembers.
    const heard: RunEvent[] = [];
    const other = sequentialEngine({
      tools: createSeedTools(workspace).registry,
      store,
      onEvent: (event) => heard.push(event),
    });
    expect(await other.run(plan, { authorization }).result).toEqual(first);
    expect(heard).toEqual(journal);
  });

  it('replays a failed run as failed, without calling the failing tool again', async () => {
    const { engine, log } = setup();
    const plan = makePlan([
      { id: 'a', tool: 'echo', args: {} },
      { id: 'b', tool: 'fail', args: {} },
    ]);
    const authorization = approve(plan);
    const first = await engine.run(plan, { authorization }).result;
    const second = await engine.run(plan, { authorization }).result;
    expect(second).toEqual(first);
    expect(second.status).toBe('failed');
    expect(log.count()).toBe(2);
  });

  it('gives a new run for a new approval of the same plan', async () => {
    const { engine, log } = setup();
    const plan = echoPlan(2);
    const first = await engine.run(plan, { authorization: approve(plan) }).result;
    const second = await engine.run(plan, { authorization: approve(plan) }).result;
    expect(second.runId).not.toBe(first.runId);
    expect(second.planDigest).toBe(first.planDigest);
    expect(second.steps.map((step) => step.executionId)).not.toEqual(first.steps.map((step) => step.executionId));
    expect(log.count()).toBe(4);
    expect(await store.listRuns()).toHaveLength(2);
  });

  it('serializes its result to JSON and back unchanged', async () => {
    const { engine } = setup();
    const plan = makePlan([
      { id: 'a', tool: 'file_read', args: { path: 'lib.rs' } },
      { id: 'b', tool: 'fail', args: { message: 'nope' } },
    ]);
    const result = await engine.run(plan, { authorization: approve(plan) }).result;
    const parsed = JSON.parse(JSON.stringify(result)) as RunResult;
    expect(parsed).toEqual(result);
    expect(parsed.steps[0]?.artifacts).toEqual([{ kind: 'stdout', content: 'read lib.rs' }]);
  });

  it('delivers every event to onEvent (engine and run options) in seq order, after it is durable', async () => {
    const tools = createSeedTools(workspace);
    const fromEngine: RunEvent[] = [];
    const fromRun: RunEvent[] = [];
    const durable: boolean[] = [];
    const engine = sequentialEngine({
      tools: tools.registry,
      store,
      onEvent: (event) => {
        fromEngine.push(event);
        // Listeners hear about an event only after the store acknowledged it.
        void store.getRun(event.runId).then((run) => durable.push((run?.lastSeq ?? 0) >= event.seq));
      },
    });
    const plan = echoPlan(2);
    const result = await engine.run(plan, { authorization: approve(plan), onEvent: (event) => fromRun.push(event) })
      .result;
    const journal = await readAll(store, result.runId);
    expect(fromEngine).toEqual(journal);
    expect(fromRun).toEqual(journal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(durable.every(Boolean)).toBe(true);
  });

  it('cancels a run: the running step is cancelled (E307) and no later step starts', async () => {
    const { engine, log } = setup();
    const plan = makePlan([
      { id: 'a', tool: 'echo', args: {} },
      { id: 'slow', tool: 'sleep', args: { ms: 60_000 } },
      { id: 'c', tool: 'echo', args: {} },
    ]);
    const handle = engine.run(plan, { authorization: approve(plan) });
    for await (const event of handle) {
      if (event.type === 'tool-call' && event.stepId === 'slow') handle.cancel('user pressed stop');
    }
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(result.steps.map((step) => step.status)).toEqual(['succeeded', 'cancelled']);
    expect(result.steps[1]?.error).toMatchObject({ code: ErrorCodes.STEP_CANCELLED });
    expect(stepIdsCalled(log)).toEqual(['a', 'slow']);
  });

  it('does not start a run whose signal is already aborted: nothing is journaled (E307)', async () => {
    const { engine, log } = setup();
    const plan = echoPlan(1);
    const handle = engine.run(plan, { authorization: approve(plan), signal: AbortSignal.abort() });
    await expect(handle.result).rejects.toMatchObject({ code: ErrorCodes.STEP_CANCELLED });
    expect(await collect(handle).catch((error: unknown) => error)).toMatchObject({ code: ErrorCodes.STEP_CANCELLED });
    expect(await store.listRuns()).toEqual([]);
    expect(log.count()).toBe(0);
  });
});
