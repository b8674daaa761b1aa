import { ErrorCodes, type RunEvent, type StepResult, StepwiseError } from '@stepwise/core';
import { MemoryStore, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { type DagEngineOptions, dagEngine, type RecoveryDecision } from '../src/index.js';
import { createHarness, eventCollector, storedEvents } from './harness.js';

const byId = (steps: readonly StepResult[]) => new Map(steps.map((step) => [step.stepId, step]));

describe('references', () => {
  it('resolves $ref objects, "$id" strings and pointers into nested output', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'tree', tool: 'tree', args: {} },
      {
        id: 'pick',
        tool: 'echo',
        dependsOn: ['tree'],
        args: {
          value: {
            second: { $ref: 'tree', pointer: '/config/authors/1/name' },
            version: '$tree/config/version',
            escaped: { $ref: 'tree', pointer: '/a~1b/~0x' },
            whole: '$tree/config/authors/0',
            literal: '$$tree',
          },
        },
      },
      { id: 'last', tool: 'echo', dependsOn: ['pick'], args: { value: '$pick/value/second' } },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    const steps = byId(result.steps);
    expect(steps.get('pick')?.output).toEqual({
      value: { second: 'Grace', version: '2.0.0', escaped: 7, whole: { name: 'Ada' }, literal: '$tree' },
    });
    expect(steps.get('last')?.output).toEqual({ value: 'Grace' });
  });

  it('fails a step whose pointer is missing (E203) without calling its tool', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'tree', tool: 'tree', args: {} },
      { id: 'bad', tool: 'echo', dependsOn: ['tree'], critical: false, args: { value: '$tree/config/missing' } },
    ]);
    const result = await engine.run(plan).result;
    const bad = byId(result.steps).get('bad');
    expect(bad?.status).toBe('failed');
    expect(bad?.error?.code).toBe(ErrorCodes.REFERENCE_UNRESOLVED);
    expect(harness.log.count('echo')).toBe(0);
  });
});

describe('recovery hook', () => {
  const recoveringEngine = (decide: DagEngineOptions['onStepFailed'], store = new MemoryStore()) => {
    const harness = createHarness();
    const { events, onEvent } = eventCollector();
    return {
      harness,
      events,
      store,
      engine: dagEngine({ tools: harness.registry, store, onEvent, onStepFailed: decide }),
    };
  };

  it('retry with new args (references allowed): the step runs again with them; the decision is journaled', async () => {
    const seen: { message: string; attempt: number; recoveries: number; args: unknown }[] = [];
    const { engine, events, harness } = recoveringEngine(async (step, error, context) => {
      seen.push({
        message: error.message,
        attempt: context.attempt,
        recoveries: context.recoveries,
        args: context.args,
      });
      if (step.id !== 'fix-me' || context.recoveries > 0) return undefined;
      return {
        action: 'retry',
        args: { failures: 0, retryable: { $ref: 'source', pointer: '/value' } },
        reason: 'the model said so',
      };
    });
    const plan = makePlan([
      { id: 'source', tool: 'echo', args: { value: true } },
      { id: 'fix-me', tool: 'flaky', args: { failures: 1, retryable: false }, dependsOn: ['source'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    expect(seen).toEqual([
      { message: 'transient failure 1', attempt: 1, recoveries: 0, args: { failures: 1, retryable: false } },
    ]);
    expect(events.filter((event) => event.type === 'recovery-decision')).toEqual([
      expect.objectContaining({
        stepId: 'fix-me',
        attempt: 1,
        decision: 'retry',
        args: { failures: 0, retryable: { $ref: 'source', pointer: '/value' } },
        reason: 'the model said so',
      }),
    ]);
    expect(harness.log.calls.filter((call) => call.tool === 'flaky').map((call) => [call.attempt, call.args])).toEqual([
      [1, { failures: 1, retryable: false }],
      [2, { failures: 0, retryable: true }],
    ]);
    expect(byId(result.steps).get('fix-me')?.attempt).toBe(2);
  });

  it('a hook that keeps answering retry is bounded by its own context (recoveries)', async () => {
    const { engine, harness } = recoveringEngine(async (_step, _error, context) =>
      context.recoveries < 3 ? { action: 'retry' } : undefined,
    );
    const plan = makePlan([{ id: 'step', tool: 'flaky', args: { failures: 99, retryable: false }, critical: false }]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('partial');
    expect(harness.log.count('flaky')).toBe(4);
    expect(result.steps[0]?.attempt).toBe(4);
  });

  it('skip: the step ends skipped, dependents run, a dependent referencing it is skipped (E310)', async () => {
    const { engine } = recoveringEngine(() => ({ action: 'skip', reason: 'optional' }));
    const plan = makePlan([
      { id: 'broken', tool: 'fail', args: { message: 'nope' } },
      { id: 'independent-of-output', tool: 'echo', args: { value: 1 }, dependsOn: ['broken'] },
      { id: 'uses-output', tool: 'echo', args: { value: '$broken' }, dependsOn: ['broken'] },
      { id: 'after-uses', tool: 'echo', args: { value: 2 }, dependsOn: ['uses-output'] },
    ]);
    const result = await engine.run(plan).result;
    const steps = byId(result.steps);
    expect(steps.get('broken')?.status).toBe('skipped');
    expect(steps.get('broken')?.error?.message).toBe('skipped by the recovery hook (optional): nope');
    expect(steps.get('independent-of-output')?.status).toBe('succeeded');
    expect(steps.get('uses-output')?.status).toBe('skipped');
    expect(steps.get('uses-output')?.error).toMatchObject({
      code: ErrorCodes.DEPENDENCY_FAILED,
      message: 'step "uses-output" references the output of "broken", which was skipped',
    });
    expect(steps.get('after-uses')?.status).toBe('skipped');
    expect(result.status).toBe('partial');
  });

  it('abort fails the run even for a non-critical step', async () => {
    const { engine, events } = recoveringEngine(() => ({ action: 'abort', reason: 'unsafe' }));
    const plan = makePlan([
      { id: 'broken', tool: 'fail', args: {}, critical: false },
      { id: 'slow', tool: 'work', args: { ms: 5_000 } },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('failed');
    expect(byId(result.steps).get('slow')?.status).toBe('cancelled');
    expect(events.find((event) => event.type === 'recovery-decision')).toMatchObject({ decision: 'abort' });
  });

  it('a hook that throws or answers nonsense leaves the default policy in charge', async () => {
    for (const hook of [
      () => {
        throw new Error('model offline');
      },
      () => ({ action: 'explode' }) as unknown as RecoveryDecision,
      () => undefined,
    ]) {
      const { engine, events } = recoveringEngine(hook);
      const plan = makePlan([
        { id: 'broken', tool: 'fail', args: {}, critical: false },
        { id: 'after', tool: 'echo', args: { value: 1 }, dependsOn: ['broken'] },
      ]);
      const result = await engine.run(plan).result;
      expect(result.status).toBe('partial');
      expect(byId(result.steps).get('after')?.status).toBe('skipped');
      expect(events.some((event) => event.type === 'recovery-decision')).toBe(false);
    }
  });

  it('is not asked while retryable attempts remain', async () => {
    let asked = 0;
    const { engine } = recoveringEngine(() => {
      asked++;
      return undefined;
    });
    const plan = makePlan([
      { id: 'flaky', tool: 'flaky', args: { failures: 1 }, retry: { maxAttempts: 2, initialDelayMs: 1 } },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    expect(asked).toBe(0);
  });
});

describe('cancel and external signals', () => {
  it('cancel(): in-flight steps are aborted and recorded cancelled, nothing is left running', async () => {
    const harness = createHarness();
    const store = new MemoryStore();
    const engine = dagEngine({ tools: harness.registry, store });
    const plan = makePlan([
      { id: 'quick', tool: 'echo', args: { value: 1 } },
      { id: 'long-a', tool: 'work', args: { ms: 10_000 }, dependsOn: ['quick'] },
      { id: 'long-b', tool: 'work', args: { ms: 10_000 }, dependsOn: ['quick'] },
      { id: 'later', tool: 'echo', args: { value: 2 }, dependsOn: ['long-a'] },
    ]);
    const handle = engine.run(plan);
    while (harness.spans.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(handle.progress()).toEqual({ done: 1, total: 4, running: 2 });
    handle.cancel('operator stop');
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    const steps = byId(result.steps);
    expect(steps.get('quick')?.status).toBe('succeeded');
    for (const id of ['long-a', 'long-b', 'later']) expect(steps.get(id)?.status).toBe('cancelled');
    expect(harness.spans.every((span) => span.outcome === 'aborted' && span.end !== undefined)).toBe(true);
    expect(handle.progress().running).toBe(0);
    const events = await storedEvents(store, result.runId);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'cancelled' });
    expect(events.filter((event) => event.type === 'step-end')).toHaveLength(4);
    // Cancelling again, after the end, changes nothing.
    handle.cancel();
    expect((await store.getRun(result.runId))?.status).toBe('cancelled');
  });

  it('an external AbortSignal cancels the run, also one aborted before the run started', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([{ id: 'long', tool: 'work', args: { ms: 10_000 } }]);
    const controller = new AbortController();
    const handle = engine.run(plan, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('host shutting down')), 30);
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(result.steps[0]?.error?.message).toBe('cancelled: host shutting down');

    const early = engine.run(plan, { signal: AbortSignal.abort('too late') });
    const earlyResult = await early.result;
    expect(earlyResult.status).toBe('cancelled');
    expect(harness.spans).toHaveLength(1);
  });

  it('cancel() before the run has its journal still cancels it', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const handle = engine.run(makePlan([{ id: 'a', tool: 'echo', args: { value: 1 } }]));
    handle.cancel();
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(harness.log.count()).toBe(0);
  });
});

describe('events, progress and bad input', () => {
  it('streams events through the handle iterator and onEvent alike, in seq order', async () => {
    const harness = createHarness();
    const { events, onEvent } = eventCollector();
    const engine = dagEngine({ tools: harness.registry });
    const handle = engine.run(
      makePlan([
        { id: 'a', tool: 'echo', args: { value: 1 } },
        { id: 'b', tool: 'work', args: { ms: 20 }, dependsOn: ['a'] },
      ]),
      { onEvent },
    );
    const iterated: RunEvent[] = [];
    for await (const event of handle) iterated.push(event);
    await handle.result;
    expect(iterated.map((event) => event.seq)).toEqual(iterated.map((_, index) => index + 1));
    expect(events.map((event) => event.seq)).toEqual(iterated.map((event) => event.seq));
    expect(iterated[0]?.type).toBe('run-start');
    expect(iterated.at(-1)?.type).toBe('run-end');
  });

  it('reports progress at any moment', async () => {
    const harness = createHarness();
    const engine = dagEngine({ tools: harness.registry });
    const plan = makePlan([
      { id: 'a', tool: 'work', args: { ms: 600 } },
      { id: 'b', tool: 'work', args: { ms: 600 } },
      { id: 'c', tool: 'work', args: { ms: 10 }, dependsOn: ['a', 'b'] },
    ]);
    const handle = engine.run(plan);
    expect(handle.progress()).toEqual({ done: 0, total: 3, running: 0 });
    while (harness.spans.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(handle.progress()).toEqual({ done: 0, total: 3, running: 2 });
    expect(handle.stepStatus('c')).toBe('blocked');
    expect(handle.stepStatus('nope')).toBeUndefined();
    await handle.result;
    expect(handle.progress()).toEqual({ done: 3, total: 3, running: 0 });
  });

  it('rejects an invalid plan synchronously with every problem (nothing journaled)', async () => {
    const harness = createHarness();
    const store = new MemoryStore();
    const engine = dagEngine({ tools: harness.registry, store });
    let error: unknown;
    try {
      engine.run(
        makePlan([
          { id: 'a', tool: 'no_such_tool', args: {}, dependsOn: ['b'] },
          { id: 'b', tool: 'echo', args: {}, dependsOn: ['a'] },
        ]),
        { runId: 'run_invalid' },
      );
    } catch (thrown) {
      error = thrown;
    }
    expect(StepwiseError.isInstance(error)).toBe(true);
    expect((error as StepwiseError).code).toBe(ErrorCodes.PLAN_INVALID);
    const kinds = (((error as StepwiseError).details?.problems ?? []) as { kind: string }[]).map(
      (problem) => problem.kind,
    );
    expect(kinds).toEqual(expect.arrayContaining(['dependency-cycle', 'unknown-tool']));
    expect(await store.getRun('run_invalid')).toBeUndefined();
    expect(engine.validate({ id: 'x', steps: [] }).ok).toBe(false);
    // Garbage instead of a plan is a typed error too, not a crash.
    expect(() => engine.run(null as never)).toThrow(expect.objectContaining({ code: ErrorCodes.PLAN_INVALID }));
  });

  it('refuses bad options with E601 naming the option', () => {
    const harness = createHarness();
    const codeOf = (options: Partial<DagEngineOptions>) => {
      try {
        dagEngine({ tools: harness.registry, ...options } as DagEngineOptions);
        return undefined;
      } catch (error) {
        return [(error as StepwiseError).code, (error as StepwiseError).location];
      }
    };
    expect(codeOf({ concurrency: 0 })).toEqual([ErrorCodes.CONFIG_INVALID, 'concurrency']);
    expect(codeOf({ concurrency: 2.5 })).toEqual([ErrorCodes.CONFIG_INVALID, 'concurrency']);
    expect(codeOf({ toolConcurrency: { run_command: -1 } })).toEqual([
      ErrorCodes.CONFIG_INVALID,
      'toolConcurrency/run_command',
    ]);
    expect(codeOf({ retry: { maxAttempts: 0 } })?.[0]).toBe(ErrorCodes.CONFIG_INVALID);
    expect(codeOf({ concurrency: Number.POSITIVE_INFINITY })).toBeUndefined();
    expect(() => dagEngine(undefined as never)).toThrow(StepwiseError);
    // A list of tools instead of a registry, and a lease TTL as text, are mistakes caught up front.
    expect(codeOf({ tools: [] } as never)).toEqual([ErrorCodes.CONFIG_INVALID, 'tools']);
    expect(codeOf({ leaseTtlMs: '1s' } as never)).toEqual([ErrorCodes.CONFIG_INVALID, 'leaseTtlMs']);
  });

  it('a store that starts refusing writes mid-run rejects the result with its error, without hanging', async () => {
    const harness = createHarness();
    const inner = new MemoryStore();
    let appends = 0;
    const store = new Proxy(inner, {
      get(target, property, receiver) {
        if (property === 'append') {
          return async (...args: Parameters<MemoryStore['append']>) => {
            // The disk fills up when `c`, which runs after `a`, is journaled (however events are batched).
            if (args[1].some((event) => 'stepId' in event && event.stepId === 'c')) appends++;
            if (appends > 0) throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'disk full');
            return target.append(...args);
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const engine = dagEngine({ tools: harness.registry, store });
    const plan = makePlan([
      { id: 'a', tool: 'echo', args: { value: 1 } },
      { id: 'b', tool: 'work', args: { ms: 10_000 } },
      { id: 'c', tool: 'echo', args: { value: 2 }, dependsOn: ['a'] },
    ]);
    const started = performance.now();
    const handle = engine.run(plan);
    const error = await handle.result.catch((thrown: unknown) => thrown);
    expect((error as StepwiseError).code).toBe(ErrorCodes.STORE_UNAVAILABLE);
    expect(performance.now() - started).toBeLessThan(3_000);
    // The long step was aborted rather than left running.
    expect(harness.spansOf('b')[0]?.outcome).toBe('aborted');
  });

  it('a run id already leased elsewhere rejects with E501 and runs nothing', async () => {
    const harness = createHarness();
    const store = new MemoryStore();
    await store.acquireLease('run_taken', 'someone-else', 60_000);
    const engine = dagEngine({ tools: harness.registry, store });
    const error = await engine
      .run(makePlan([{ id: 'a', tool: 'echo', args: {} }]), { runId: 'run_taken' })
      .result.catch((thrown: unknown) => thrown);
    expect((error as StepwiseError).code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(harness.log.count()).toBe(0);
  });
});
