import {
  defineTool,
  ErrorCodes,
  type RunEvent,
  type RunResult,
  type RunStore,
  StepwiseError,
  ToolError,
  ToolRegistry,
} from '@stepwise/core';
import { type CallLog, createTestTools } from '@stepwise/core/testing';
import { type DagEngineOptions, dagEngine } from '../src/index.js';

/** When one call of the `work` tool ran, in ms of `performance.now()`. */
export interface Span {
  readonly stepId: string;
  readonly attempt: number;
  readonly start: number;
  end: number | undefined;
  outcome: 'done' | 'aborted' | undefined;
}

export interface Harness {
  readonly registry: ReturnType<typeof createTestTools>['registry'];
  readonly log: CallLog;
  readonly spans: Span[];
  /** Most `work`/`slow_tool` calls in flight at once. */
  readonly maxActive: () => number;
  readonly maxActiveOf: (tool: string) => number;
  spansOf(stepId: string): Span[];
}

/**
 * core's test tools (echo, note, fail, sleep, hang) plus instrumented ones: `work` sleeps `ms`
 * honouring its signal and records its span; `slow_tool` is the same under another name (for
 * per-tool limits); `flaky` fails retryably `failures` times per step, then succeeds; `tree`
 * returns a nested object.
 */
export function createHarness(): Harness {
  const { registry, log } = createTestTools();
  const spans: Span[] = [];
  const active = new Map<string, number>();
  const peaks = new Map<string, number>();
  let activeAll = 0;
  let peakAll = 0;
  const flakyCounts = new Map<string, number>();

  const sleeper = (name: string) =>
    defineTool({
      name,
      description: 'Waits `ms`, honouring its signal, and records when it ran.',
      input: {
        type: 'object',
        properties: { ms: { type: 'integer', minimum: 0 }, value: {} },
        required: ['ms'],
      },
      effect: 'read',
      execute: (input, context) => {
        const { ms, value } = input as { ms: number; value?: unknown };
        log.calls.push({ tool: name, args: input, stepId: context.stepId, attempt: context.attempt });
        const span: Span = {
          stepId: context.stepId,
          attempt: context.attempt,
          start: performance.now(),
          end: undefined,
          outcome: undefined,
        };
        spans.push(span);
        activeAll++;
        peakAll = Math.max(peakAll, activeAll);
        const mine = (active.get(name) ?? 0) + 1;
        active.set(name, mine);
        peaks.set(name, Math.max(peaks.get(name) ?? 0, mine));
        const finish = (outcome: 'done' | 'aborted') => {
          span.end = performance.now();
          span.outcome = outcome;
          activeAll--;
          active.set(name, (active.get(name) ?? 1) - 1);
        };
        return new Promise<{ stepId: string; value: unknown }>((resolve, reject) => {
          const timer = setTimeout(() => {
            context.signal.removeEventListener('abort', onAbort);
            finish('done');
            resolve({ stepId: context.stepId, value: value ?? null });
          }, ms);
          const onAbort = () => {
            clearTimeout(timer);
            finish('aborted');
            reject(context.signal.reason);
          };
          if (context.signal.aborted) onAbort();
          else context.signal.addEventListener('abort', onAbort, { once: true });
        });
      },
    });

  registry.register(sleeper('work'));
  registry.register(sleeper('slow_tool'));
  registry.register(
    defineTool({
      name: 'flaky',
      description: 'Fails `failures` times per step with a retryable error, then succeeds.',
      input: {
        type: 'object',
        properties: { failures: { type: 'integer', minimum: 0 }, retryable: { type: 'boolean' } },
        required: ['failures'],
      },
      effect: 'read',
      execute: (input, context) => {
        const { failures, retryable } = input as { failures: number; retryable?: boolean };
        log.calls.push({ tool: 'flaky', args: input, stepId: context.stepId, attempt: context.attempt });
        const count = (flakyCounts.get(context.stepId) ?? 0) + 1;
        flakyCounts.set(context.stepId, count);
        if (count <= failures)
          throw new ToolError({ message: `transient failure ${count}`, retryable: retryable ?? true });
        return { succeededOn: count };
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'tree',
      description: 'Returns a nested object.',
      input: { type: 'object', properties: {} },
      effect: 'read',
      execute: (_input, context) => {
        log.calls.push({ tool: 'tree', args: {}, stepId: context.stepId, attempt: context.attempt });
        return { config: { version: '2.0.0', authors: [{ name: 'Ada' }, { name: 'Grace' }] }, 'a/b': { '~x': 7 } };
      },
    }),
  );

  return {
    registry,
    log,
    spans,
    maxActive: () => peakAll,
    maxActiveOf: (tool) => peaks.get(tool) ?? 0,
    spansOf: (stepId) => spans.filter((span) => span.stepId === stepId),
  };
}

/** Collects every event a run journals, in order. */
export function eventCollector(): { events: RunEvent[]; onEvent: (event: RunEvent) => void } {
  const events: RunEvent[] = [];
  return { events, onEvent: (event) => events.push(event) };
}

export async function storedEvents(store: RunStore, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of store.read(runId)) events.push(event);
  return events;
}

/** The span of the single call of `stepId` (throws when there is not exactly one). */
export function onlySpan(harness: Harness, stepId: string): Span {
  const found = harness.spansOf(stepId);
  if (found.length !== 1) throw new Error(`expected one call of ${stepId}, got ${found.length}`);
  return found[0] as Span;
}

/** Resumes once the crashed owner's lease has expired (E501 until then). */
export async function resumeWhenFree(options: DagEngineOptions, runId: string): Promise<{ result: RunResult }> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const handle = dagEngine(options).resume(runId);
    try {
      return { result: await handle.result };
    } catch (error) {
      if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.LEASE_CONFLICT || Date.now() > deadline)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  }
}

/**
 * `look` is a read tool, `put` a write tool (not idempotent); both record each call in `calls`,
 * await `onCall` and return `{ step }`.
 */
export function lookAndPut(calls: string[], onCall?: (stepId: string, tool: string) => unknown): ToolRegistry {
  const tool = (name: string, effect: 'read' | 'write') =>
    defineTool({
      name,
      description: `${effect} something`,
      input: { type: 'object' },
      effect,
      execute: async (_input, context) => {
        calls.push(context.stepId);
        await onCall?.(context.stepId, name);
        return { step: context.stepId };
      },
    });
  return new ToolRegistry([tool('look', 'read'), tool('put', 'write')]);
}
