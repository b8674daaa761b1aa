import { ErrorCodes, readAll, StepwiseError } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { agenticEngine } from '../src/index.js';
import { analysis, complete, scriptedModel, toolCall } from '../src/testing/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

describe('agenticEngine across steps', () => {
  it('runs tool steps through the kernel without the model and passes outputs to goal steps', async () => {
    const tools = testTools();
    const model = scriptedModel([complete('summarised')]);
    const { engine, events } = testEngine({ model, tools: tools.registry });
    const result = await engine.run(
      goalPlan([
        { id: 'fetch', tool: 'echo', args: { value: 'data-42' } },
        { id: 'use', tool: 'echo', args: { value: { $ref: 'fetch', pointer: '/value' } }, dependsOn: ['fetch'] },
        { id: 'think', description: 'summarise', dependsOn: ['use'] },
      ]),
    ).result;
    expect(result.status).toBe('completed');
    expect(result.steps.map((step) => [step.stepId, step.status, step.tool])).toEqual([
      ['fetch', 'succeeded', 'echo'],
      ['use', 'succeeded', 'echo'],
      ['think', 'succeeded', undefined],
    ]);
    expect(result.steps[1]?.output).toEqual({ value: 'data-42' });
    expect(model.calls).toBe(1);
    expect(model.requests[0]!.messages[1]?.content).toContain('- use: {"value":"data-42"}');
    expect(ofType(events, 'step-start').map((event) => event.stepId)).toEqual(['fetch', 'use', 'think']);
  });

  it('skips dependents of a failed non-critical step and continues independent ones (partial)', async () => {
    const tools = testTools();
    const { engine } = testEngine({ model: scriptedModel([]), tools: tools.registry });
    const result = await engine.run(
      goalPlan([
        { id: 'flaky', tool: 'fail', args: {}, critical: false },
        { id: 'child', tool: 'echo', args: {}, dependsOn: ['flaky'] },
        { id: 'grandchild', tool: 'echo', args: {}, dependsOn: ['child'] },
        { id: 'other', tool: 'echo', args: { value: 1 } },
      ]),
    ).result;
    expect(result.status).toBe('partial');
    expect(Object.fromEntries(result.steps.map((step) => [step.stepId, step.status]))).toEqual({
      flaky: 'failed',
      child: 'skipped',
      grandchild: 'skipped',
      other: 'succeeded',
    });
    expect(result.steps[1]?.error?.code).toBe(ErrorCodes.DEPENDENCY_FAILED);
    expect(tools.log.count('echo')).toBe(1);
  });

  it('stops the run at a failed critical step: nothing else starts', async () => {
    const tools = testTools();
    const { engine } = testEngine({ model: scriptedModel([]), tools: tools.registry });
    const result = await engine.run(
      goalPlan([
        { id: 'first', tool: 'fail', args: {} },
        { id: 'second', tool: 'echo', args: {} },
      ]),
    ).result;
    expect(result.status).toBe('failed');
    // The dag rule: a step the stop kept from starting ends `cancelled`, its tool never called.
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['first', 'failed'],
      ['second', 'cancelled'],
    ]);
    expect(tools.log.count('echo')).toBe(0);
  });

  it('cancels a critical failure’s in-flight siblings when steps run concurrently', async () => {
    const tools = testTools();
    const model = scriptedModel(() => ({ ...analysis('waiting'), delayMs: 10_000 }));
    const { engine } = testEngine({ model, tools: tools.registry, concurrency: 2 });
    const result = await engine.run(
      goalPlan([{ id: 'slow-goal' }, { id: 'boom', tool: 'fail', args: {}, dependsOn: [] }]),
    ).result;
    expect(result.status).toBe('failed');
    const slow = result.steps.find((step) => step.stepId === 'slow-goal');
    expect(slow?.status).toBe('cancelled');
    expect(slow?.error?.code).toBe(ErrorCodes.STEP_CANCELLED);
  });

  it('retries a retryable tool step per its retry policy', async () => {
    const tools = testTools();
    const { engine, events } = testEngine({ model: scriptedModel([]), tools: tools.registry });
    const result = await engine.run(
      goalPlan([
        {
          id: 'retry',
          tool: 'fail',
          args: { retryable: true },
          retry: { maxAttempts: 3, initialDelayMs: 1, jitter: 0 },
        },
      ]),
    ).result;
    expect(result.steps[0]).toMatchObject({ status: 'failed', attempt: 3 });
    expect(tools.log.count('fail')).toBe(3);
    expect(ofType(events, 'step-retry').map((event) => event.nextAttempt)).toEqual([2, 3]);
  });

  it('cancels a running goal step when the host cancels the run', async () => {
    const model = scriptedModel(() => ({ ...analysis('slow'), delayMs: 10_000 }));
    const { engine } = testEngine({ model, tools: testTools().registry });
    const handle = engine.run(goalPlan([{ id: 'slow' }, { id: 'after', dependsOn: ['slow'] }]));
    setTimeout(() => handle.cancel('user pressed ctrl-c'), 30);
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]).toMatchObject({ status: 'cancelled', error: { code: ErrorCodes.STEP_CANCELLED } });
    expect(result.steps[0]?.error?.message).toContain('user pressed ctrl-c');
    // Its dependent never started: skipped behind the cancelled step, or cancelled with the run.
    expect(result.steps[1]).toMatchObject({ stepId: 'after', attempt: 0 });
    expect(['skipped', 'cancelled']).toContain(result.steps[1]?.status);
  });

  it('fails a goal step that exceeds its timeout with E306', async () => {
    const model = scriptedModel(() => ({ ...analysis('slow'), delayMs: 10_000 }));
    const { engine } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'slow', timeoutMs: 50 }])).result;
    expect(result.steps[0]).toMatchObject({ status: 'failed', error: { code: ErrorCodes.STEP_TIMEOUT } });
  });

  it('rejects an invalid plan with E001 and every problem, before journaling anything', async () => {
    const { engine, store } = testEngine({ model: scriptedModel([]), tools: testTools().registry });
    let error: unknown;
    try {
      engine.run(
        goalPlan([
          { id: 'a', tool: 'nope', args: {} },
          { id: 'b', dependsOn: ['ghost'] },
        ]),
      );
    } catch (thrown) {
      error = thrown;
    }
    expect(StepwiseError.isInstance(error)).toBe(true);
    expect((error as StepwiseError).details?.problems).toHaveLength(2);
    expect(await store.listRuns()).toEqual([]);
    expect(engine.validate({ id: 'x', steps: [{ id: 'goal-only' }] }).ok).toBe(true);
  });

  it('iterates events live and after the fact; every event serialises to one JSON line', async () => {
    const model = scriptedModel([toolCall('echo', { value: 1 }), complete('ok')]);
    const { engine, store } = testEngine({ model, tools: testTools().registry });
    const handle = engine.run(goalPlan([{ id: 'x' }]), { runId: 'run_live' });
    const live = [];
    for await (const event of handle) live.push(event);
    const stored = await readAll(store, 'run_live');
    expect(live.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect(live.at(-1)?.type).toBe('run-end');
    for (const event of live) expect(JSON.stringify(event)).not.toContain('\n');
  });

  it('refuses bad configuration with E601', () => {
    const tools = testTools().registry;
    expect(() => agenticEngine({ tools, model: undefined as never })).toThrow(/needs \{ model \}/);
    expect(() => agenticEngine({ tools, model: scriptedModel([]), limits: { maxTurns: 0 } })).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID }),
    );
  });

  it('redacts secrets in tool results before they reach the model, and everywhere in the journal', async () => {
    const secret = 'sk-proj-abcdefghijklmnopqrstuvwxyz123456';
    const model = scriptedModel([toolCall('echo', { value: `key is ${secret}` }), complete('done')]);
    const { engine, store } = testEngine({ model, tools: testTools().registry });
    await engine.run(goalPlan([{ id: 'x' }]), { runId: 'run_secret' }).result;
    const toolMessage = model.requests[1]!.messages.at(-1);
    expect(toolMessage?.role).toBe('tool');
    expect(toolMessage?.content).toBe('{"value":"key is [REDACTED]"}');
    expect(JSON.stringify(await readAll(store, 'run_secret'))).not.toContain(secret);
  });
});
