import {
  defineTool,
  ErrorCodes,
  type Plan,
  type PlanAuthorization,
  type RunEvent,
  type RunStore,
  readAll,
  ToolRegistry,
} from '@stepwise/core';
import { deriveExecutionId, deriveRunId, startRun } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type SequentialEngineOptions, sequentialEngine } from '../src/index.js';
import { removeTempDirectories, storeVariants, tempDirectory } from './support/stores.js';
import { approve, createSeedTools } from './support/tools.js';

afterAll(removeTempDirectories);

/** Tools whose `stall` / `stall_read` block on a gate the first time they are called. */
function stallingTools() {
  const tools = createSeedTools(tempDirectory());
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const calls: string[] = [];
  const stall = (name: string, effect: 'write' | 'read') =>
    defineTool({
      name,
      description: 'Blocks on the gate on its first call.',
      input: z.object({}),
      effect,
      execute: async (_input, context) => {
        calls.push(`${context.stepId}#${context.attempt}`);
        if (calls.length === 1) await gate;
        return { stalled: context.stepId };
      },
    });
  tools.registry.register(stall('stall', 'write'));
  tools.registry.register(stall('stall_read', 'read'));
  return { ...tools, calls, openGate: () => open() };
}

const plan3 = (tool: string): Plan =>
  makePlan([
    { id: 'a', tool: 'note', args: { text: 'first' } },
    { id: 'b', tool, args: tool === 'note' ? { text: 'second' } : {} },
    { id: 'c', tool: 'note', args: { text: 'third' } },
  ]);

describe.each(storeVariants)('resume on $name', (variant) => {
  let store: RunStore;
  beforeEach(async () => {
    store = await variant.open();
  });
  afterEach(async () => {
    await store.close();
  });

  const engineOn = (registry: ToolRegistry, extra: Partial<SequentialEngineOptions> = {}) =>
    sequentialEngine({ tools: registry, store, owner: 'host-1', ...extra });

  /** Starts a run and returns once step `stepId`'s tool call is durable: the "crash" point. */
  async function startUntilToolCall(
    registry: ToolRegistry,
    plan: Plan,
    authorization: PlanAuthorization,
    stepId: string,
  ) {
    let reached!: () => void;
    const atCall = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const engine = engineOn(registry, {
      onEvent: (event) => {
        if (event.type === 'tool-call' && event.stepId === stepId) reached();
      },
    });
    const handle = engine.run(plan, { authorization });
    await atCall;
    return handle;
  }

  it('fails an in-flight non-idempotent step as interrupted (E309); completed steps are not re-run', async () => {
    const tools = stallingTools();
    const plan = plan3('stall');
    const authorization = approve(plan);
    const crashed = await startUntilToolCall(tools.registry, plan, authorization, 'b');

    const resumed = engineOn(tools.registry).resume(crashed.runId);
    const result = await resumed.result;
    expect(result.status).toBe('failed');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['a', 'succeeded'],
      ['b', 'failed'],
    ]);
    expect(result.steps[1]?.error).toMatchObject({ code: ErrorCodes.STEP_INTERRUPTED, location: 'b' });
    expect(result.steps[1]?.error?.message).toContain('"b"');
    expect(tools.log.calls.map((call) => call.stepId)).toEqual(['a']);
    expect(tools.calls).toEqual(['b#1']);
    const events = await readAll(store, crashed.runId);
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({
      owner: 'host-1',
      interrupted: [{ stepId: 'b', action: 'fail' }],
    });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));

    // The "crashed" writer wakes up: its lease was taken over, so it cannot write any more.
    tools.openGate();
    // Refused by the fencing token (E501) or by the seq check that runs first in some stores (E502).
    const refusal = await crashed.result.then(
      () => undefined,
      (error: { code?: string }) => error.code,
    );
    expect([ErrorCodes.LEASE_CONFLICT, ErrorCodes.JOURNAL_CONFLICT]).toContain(refusal);
    expect(await readAll(store, crashed.runId)).toEqual(events);
  });

  it('re-runs an in-flight idempotent step (as attempt 2) and continues after it', async () => {
    const tools = stallingTools();
    const plan = plan3('stall_read');
    const authorization = approve(plan);
    const crashed = await startUntilToolCall(tools.registry, plan, authorization, 'b');

    const result = await engineOn(tools.registry).resume(crashed.runId).result;
    expect(result.status).toBe('completed');
    expect(result.steps.map((step) => [step.stepId, step.attempt])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 1],
    ]);
    expect(result.steps[1]?.executionId).toBe(deriveExecutionId(result.runId, 'b', 2));
    expect(tools.calls).toEqual(['b#1', 'b#2']);
    expect(tools.log.calls.map((call) => call.stepId)).toEqual(['a', 'c']);
    const events = await readAll(store, result.runId);
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({
      interrupted: [{ stepId: 'b', action: 'rerun' }],
    });
    tools.openGate();
  });

  it('re-runs an in-flight non-idempotent step when the host allows it', async () => {
    const tools = stallingTools();
    const plan = plan3('stall');
    const crashed = await startUntilToolCall(tools.registry, plan, approve(plan), 'b');
    const result = await engineOn(tools.registry, { allowRerunInterrupted: true }).resume(crashed.runId).result;
    expect(result.status).toBe('completed');
    expect(tools.calls).toEqual(['b#1', 'b#2']);
    tools.openGate();
  });

  it('treats run() of an approved plan whose run is unfinished as a resume', async () => {
    const tools = stallingTools();
    const plan = plan3('stall_read');
    const authorization = approve(plan);
    const crashed = await startUntilToolCall(tools.registry, plan, authorization, 'b');
    const result = await engineOn(tools.registry).run(plan, { authorization }).result;
    expect(result.runId).toBe(crashed.runId);
    expect(result.status).toBe('completed');
    expect(tools.log.calls.map((call) => call.stepId)).toEqual(['a', 'c']);
    tools.openGate();
  });

  /** Writes a journal by hand, as a process that died at a chosen point would have left it. */
  async function crafted(plan: Plan, write: (emit: (event: Record<string, unknown>) => void, runId: string) => void) {
    const authorization = approve(plan);
    const runId = deriveRunId(authorization);
    const journal = await startRun({ store, runId, plan, engine: 'sequential', authorization, owner: 'dead' });
    write((event) => journal.emit(event as never), runId);
    await journal.close();
    return { runId, authorization };
  }

  const stepEvents = (runId: string, stepId: string, tool: string, output: unknown, idempotent = false) => {
    const executionId = deriveExecutionId(runId, stepId, 1);
    const at = new Date().toISOString();
    return {
      executionId,
      start: { type: 'step-start', stepId, tool, attempt: 1, executionId },
      call: { type: 'tool-call', stepId, executionId, attempt: 1, tool, effect: 'write', idempotent, args: {} },
      result: {
        type: 'tool-result',
        stepId,
        executionId,
        tool,
        status: 'succeeded',
        output,
        startedAt: at,
        durationMs: 7,
      },
      end: {
        type: 'step-end',
        stepId,
        result: { stepId, tool, status: 'succeeded', output, executionId, attempt: 1, startedAt: at, durationMs: 7 },
      },
    };
  };

  it('finishes a step whose tool result was journaled from that result, without calling the tool', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = makePlan([
      { id: 'a', tool: 'note', args: { text: 'x' } },
      { id: 'b', tool: 'note', args: { text: 'y' } },
    ]);
    const { runId } = await crafted(plan, (emit, id) => {
      const a = stepEvents(id, 'a', 'note', { written: 1 });
      emit(a.start);
      emit(a.call);
      emit(a.result);
    });
    const result = await engineOn(tools.registry).resume(runId).result;
    expect(result.status).toBe('completed');
    expect(result.steps[0]).toMatchObject({ stepId: 'a', status: 'succeeded', output: { written: 1 } });
    expect(result.steps[0]?.durationMs).toBeGreaterThanOrEqual(7);
    expect(tools.log.calls.map((call) => call.stepId)).toEqual(['b']);
    const events = await readAll(store, runId);
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({
      interrupted: [{ stepId: 'a', action: 'finish' }],
    });
  });

  it('re-runs a non-idempotent step whose tool never started (crash before tool-call)', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = makePlan([{ id: 'a', tool: 'note', args: { text: 'x' } }]);
    const { runId } = await crafted(plan, (emit, id) => {
      emit(stepEvents(id, 'a', 'note', undefined).start);
    });
    const result = await engineOn(tools.registry).resume(runId).result;
    expect(result.status).toBe('completed');
    expect(tools.log.count('note')).toBe(1);
  });

  it('ends a run that had already stopped at a failed step (only run-end was missing) as failed', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = makePlan([
      { id: 'a', tool: 'note', args: { text: 'x' } },
      { id: 'b', tool: 'note', args: { text: 'y' } },
    ]);
    const { runId } = await crafted(plan, (emit, id) => {
      const a = stepEvents(id, 'a', 'note', undefined);
      emit(a.start);
      emit({
        type: 'step-end',
        stepId: 'a',
        result: {
          stepId: 'a',
          tool: 'note',
          status: 'failed',
          error: { code: 'E300', message: 'disk full', retryable: false },
          executionId: a.executionId,
          attempt: 1,
          startedAt: new Date().toISOString(),
          durationMs: 3,
        },
      });
    });
    const result = await engineOn(tools.registry).resume(runId).result;
    expect(result.status).toBe('failed');
    expect(result.steps).toEqual([expect.objectContaining({ stepId: 'a', status: 'failed' })]);
    expect(tools.log.count()).toBe(0);
  });

  it('completes a run whose every step had ended (only run-end was missing) without calling a tool', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = makePlan([{ id: 'a', tool: 'note', args: { text: 'x' } }]);
    const { runId } = await crafted(plan, (emit, id) => {
      const a = stepEvents(id, 'a', 'note', { written: 1 });
      for (const event of [a.start, a.call, a.result, a.end]) emit(event);
    });
    const result = await engineOn(tools.registry).resume(runId).result;
    expect(result).toMatchObject({ status: 'completed', durationMs: 7 });
    expect(tools.log.count()).toBe(0);
  });

  it('replays a finished run on resume, without taking over anything', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = plan3('note');
    const first = await engineOn(tools.registry).run(plan, { authorization: approve(plan) }).result;
    const events = await readAll(store, first.runId);
    const again = await engineOn(tools.registry).resume(first.runId).result;
    expect(again).toEqual(first);
    expect(tools.log.count()).toBe(3);
    expect(await readAll(store, first.runId)).toEqual(events);
  });

  it('rejects resuming an unknown run with E505', async () => {
    const tools = createSeedTools(tempDirectory());
    const handle = engineOn(tools.registry).resume('run_nobody');
    await expect(handle.result).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });
    const executor = engineOn(tools.registry).createExecutor();
    await expect(executor.loadRun('run_nobody')).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });
    expect(executor.state).toMatchObject({ status: 'failed', runId: 'run_nobody', result: undefined });
    await expect(executor.executeStep()).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });
  });

  it('lets exactly one of two concurrent resumers win (E501 for the other)', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = plan3('note');
    const { runId } = await crafted(plan, (emit, id) => {
      emit(stepEvents(id, 'a', 'note', undefined).start);
    });
    const first = sequentialEngine({ tools: tools.registry, store, owner: 'host-a' }).resume(runId);
    const second = sequentialEngine({ tools: tools.registry, store, owner: 'host-b' }).resume(runId);
    const outcomes = await Promise.allSettled([first.result, second.result]);
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const lost = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ code: ErrorCodes.LEASE_CONFLICT });
    expect(tools.log.calls.map((call) => call.stepId)).toEqual(['a', 'b', 'c']);
    const resumes = (await readAll(store, runId)).filter((event) => event.type === 'run-resume');
    expect(resumes).toHaveLength(1);
  });

  it('refuses to resume when a tool of the plan is no longer registered (E201), and releases the run', async () => {
    const plan = plan3('note');
    const { runId } = await crafted(plan, (emit, id) => {
      emit(stepEvents(id, 'a', 'note', undefined).start);
    });
    const without = createSeedTools(tempDirectory());
    const bare = sequentialEngine({ tools: new ToolRegistry(), store });
    await expect(bare.resume(runId).result).rejects.toMatchObject({ code: ErrorCodes.TOOL_UNKNOWN });
    const result = await sequentialEngine({ tools: without.registry, store, owner: 'other' }).resume(runId).result;
    expect(result.status).toBe('completed');
  });

  it('delivers the whole journal to onEvent on resume, recorded events first', async () => {
    const tools = createSeedTools(tempDirectory());
    const plan = plan3('note');
    const { runId } = await crafted(plan, (emit, id) => {
      emit(stepEvents(id, 'a', 'note', undefined).start);
    });
    const seen: RunEvent[] = [];
    const result = await engineOn(tools.registry, { onEvent: (event) => seen.push(event) }).resume(runId).result;
    expect(seen).toEqual(await readAll(store, result.runId));
    expect(seen[0]?.type).toBe('run-start');
  });
});
