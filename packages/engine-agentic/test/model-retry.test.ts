import { ErrorCodes } from '@stepwise/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ModelError } from '../src/index.js';
import { complete, scriptedModel } from '../src/testing/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

/** Lets pending promise chains run; setImmediate stays real under these fake timers. */
async function settle(): Promise<void> {
  for (let index = 0; index < 50; index++) await new Promise((resolve) => setImmediate(resolve));
}

describe('transient model errors', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('retries with exponential backoff and honours Retry-After', async () => {
    const model = scriptedModel([
      { error: new ModelError('overloaded', { retryable: true, status: 503 }) },
      { error: new ModelError('slow down', { retryable: true, status: 429, retryAfterMs: 5_000 }) },
      { error: new ModelError('bad gateway', { retryable: true, status: 502 }) },
      complete('finally'),
    ]);
    const { engine, events } = testEngine({ model, tools: testTools().registry });
    const handle = engine.run(goalPlan([{ id: 'x' }]));

    await settle();
    expect(model.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(model.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1); // 1 s backoff
    await settle();
    expect(model.calls).toBe(2);
    await vi.advanceTimersByTimeAsync(4_999); // Retry-After 5 s beats the 2 s backoff
    expect(model.calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(model.calls).toBe(3);
    await vi.advanceTimersByTimeAsync(3_999); // 4 s backoff
    expect(model.calls).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(model.calls).toBe(4);

    const result = await handle.result;
    expect(result.status).toBe('completed');
    const failures = ofType(events, 'model-call').filter((event) => event.error);
    expect(failures.map((event) => [event.turn, event.error?.details?.call, event.error?.details?.retryInMs])).toEqual([
      [1, 1, 1_000],
      [1, 2, 5_000],
      [1, 3, 4_000],
    ]);
    expect(failures.every((event) => event.error?.code === ErrorCodes.MODEL_ERROR)).toBe(true);
  });

  it('gives up after the configured retries with E407', async () => {
    const model = scriptedModel(() => ({ error: new ModelError('down', { retryable: true, status: 500 }) }));
    const { engine } = testEngine({ model, tools: testTools().registry, retry: { retries: 2 } });
    const handle = engine.run(goalPlan([{ id: 'x' }]));
    await settle();
    await vi.advanceTimersByTimeAsync(1_000);
    await settle();
    await vi.advanceTimersByTimeAsync(2_000);
    await settle();
    const result = await handle.result;
    expect(model.calls).toBe(3);
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.MODEL_ERROR, retryable: false });
    expect(result.steps[0]?.error?.message).toMatch(/gave up after 3 calls/);
  });

  it('does not retry a non-transient error, nor wait for a Retry-After beyond the cap', async () => {
    const badRequest = scriptedModel([{ error: new ModelError('unknown model', { status: 400 }) }]);
    const first = testEngine({ model: badRequest, tools: testTools().registry });
    const result = await first.engine.run(goalPlan([{ id: 'x' }])).result;
    expect(badRequest.calls).toBe(1);
    expect(result.steps[0]?.error?.message).toBe('unknown model');

    const patient = scriptedModel([
      { error: new ModelError('come back tomorrow', { retryable: true, retryAfterMs: 86_400_000 }) },
    ]);
    const second = testEngine({ model: patient, tools: testTools().registry });
    const waited = await second.engine.run(goalPlan([{ id: 'x' }])).result;
    expect(patient.calls).toBe(1);
    expect(waited.steps[0]?.error?.code).toBe(ErrorCodes.MODEL_ERROR);
  });

  it('fails the step with E407, once, when a model throws a value with no text (no prototype)', async () => {
    const model = scriptedModel([{ error: Object.create(null) }]);
    const { engine } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'x' }])).result;
    expect(model.calls).toBe(1);
    expect(result.status).toBe('failed');
    expect(result.steps[0]?.error).toMatchObject({
      code: ErrorCodes.MODEL_ERROR,
      message: 'model call failed: (a thrown object that cannot be shown as text)',
      retryable: false,
    });
  });

  it('aborts a model call that exceeds modelTimeoutMs and retries it', async () => {
    const model = scriptedModel([{ ...complete('too late'), delayMs: 60_000 }, complete('in time')]);
    const { engine } = testEngine({ model, tools: testTools().registry, modelTimeoutMs: 5_000 });
    const handle = engine.run(goalPlan([{ id: 'x' }]));
    await settle();
    await vi.advanceTimersByTimeAsync(5_000);
    await settle();
    await vi.advanceTimersByTimeAsync(1_000);
    await settle();
    const result = await handle.result;
    expect(model.calls).toBe(2);
    expect(result.steps[0]?.output).toMatchObject({ summary: 'in time' });
  });
});
