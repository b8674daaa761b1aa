import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createRedactor, MemoryStore, type RunEvent } from '@stepwise/core';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { agenticEngine, heuristicEstimator, openAICompatible } from '@stepwise/engine-agentic';
import { complete, scriptedModel, startFakeOpenAIServer, toolCall } from '@stepwise/engine-agentic/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { afterEach, describe, expect, it } from 'vitest';
import { openTelemetryListener } from '../src/index.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('stepwise-test');

afterEach(() => exporter.reset());

const SECRET = 'hunter2-very-secret';

function spansByName(): Map<string, ReadableSpan[]> {
  const byName = new Map<string, ReadableSpan[]>();
  for (const span of exporter.getFinishedSpans()) byName.set(span.name, [...(byName.get(span.name) ?? []), span]);
  return byName;
}

const one = (byName: Map<string, ReadableSpan[]>, name: string): ReadableSpan => {
  const found = byName.get(name);
  expect(found, `span "${name}" among ${[...byName.keys()].join(', ')}`).toHaveLength(1);
  return found?.[0] as ReadableSpan;
};

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const millis = (time: ReadableSpan['startTime']) => time[0] * 1000 + time[1] / 1e6;

describe('openTelemetryListener on a dag run', () => {
  it('nests run › step › attempt › tool call with the events’ times, statuses and no secrets', async () => {
    const events: RunEvent[] = [];
    const listener = openTelemetryListener({ tracer, recordContent: true });
    const engine = dagEngine({
      tools: createTestTools().registry,
      store: new MemoryStore(),
      redactor: createRedactor({ secrets: [SECRET] }),
      retry: { maxAttempts: 2, initialDelayMs: 1 },
      onEvent: (event) => {
        events.push(event);
        listener(event);
      },
    });
    const plan = makePlan([
      { id: 'read', tool: 'echo', args: { value: `token ${SECRET}` } },
      {
        id: 'flaky',
        tool: 'fail',
        args: { retryable: true, message: 'flaky' },
        dependsOn: ['read'],
        critical: false,
        retry: { maxAttempts: 2, initialDelayMs: 1 },
      },
      { id: 'after', tool: 'echo', args: {}, dependsOn: ['flaky'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('partial');

    const byName = spansByName();
    const run = one(byName, `run ${plan.id}`);
    expect(run.attributes).toMatchObject({ 'stepwise.run.id': result.runId, 'stepwise.run.status': 'partial' });
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(parentOf(run)).toBeUndefined();

    const read = one(byName, 'step read');
    expect(parentOf(read)).toBe(run.spanContext().spanId);
    expect(read.attributes).toMatchObject({ 'stepwise.step.status': 'succeeded', 'stepwise.tool.name': 'echo' });
    const tool = (byName.get('execute_tool echo') ?? []).find((span) =>
      String(span.attributes['gen_ai.tool.call.arguments']).includes('token'),
    );
    expect(tool?.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'echo' });
    expect(String(tool?.attributes['gen_ai.tool.call.arguments'])).toContain('[REDACTED]');
    const readAttempt = byName.get('attempt 1')?.find((span) => parentOf(span) === read.spanContext().spanId);
    expect(parentOf(tool as ReadableSpan)).toBe(readAttempt?.spanContext().spanId);

    const flaky = one(byName, 'step flaky');
    expect(flaky.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'flaky' });
    expect(flaky.attributes).toMatchObject({ 'stepwise.step.attempts': 2, 'error.type': 'E300' });
    const flakyAttempts = [...(byName.get('attempt 1') ?? []), ...(byName.get('attempt 2') ?? [])].filter(
      (span) => parentOf(span) === flaky.spanContext().spanId,
    );
    expect(flakyAttempts.map((span) => span.attributes['stepwise.step.attempt']).sort()).toEqual([1, 2]);
    expect(flakyAttempts.every((span) => span.status.code === SpanStatusCode.ERROR)).toBe(true);
    expect(flaky.events.map((event) => event.name)).toContain('step-retry');

    // A skipped step still appears, as a step that never started a tool.
    expect(one(byName, 'step after').attributes['stepwise.step.status']).toBe('skipped');

    // Times come from the journal: the run span covers run-start to run-end exactly.
    const start = events.find((event) => event.type === 'run-start');
    const end = events.find((event) => event.type === 'run-end');
    expect(millis(run.startTime)).toBe(Date.parse(start?.at ?? ''));
    expect(millis(run.endTime)).toBe(Date.parse(end?.at ?? ''));
    for (const span of exporter.getFinishedSpans()) {
      expect(JSON.stringify(span.attributes)).not.toContain(SECRET);
      expect(millis(span.endTime)).toBeGreaterThanOrEqual(millis(span.startTime));
    }
  });

  it('leaves tool arguments out unless asked, and parents runs under the host span', async () => {
    const parent = tracer.startSpan('host request');
    const listener = openTelemetryListener({ tracer, parentContext: () => trace.setSpan(context.active(), parent) });
    const engine = dagEngine({ tools: createTestTools().registry, onEvent: listener });
    await engine.run(makePlan([{ id: 'a', tool: 'echo', args: { value: 1 } }])).result;
    parent.end();
    const byName = spansByName();
    expect(one(byName, 'execute_tool echo').attributes).not.toHaveProperty('gen_ai.tool.call.arguments');
    const run = [...byName.entries()].find(([name]) => name.startsWith('run '))?.[1][0];
    const host = one(byName, 'host request');
    expect(run?.spanContext().traceId).toBe(host.spanContext().traceId);
    expect(run && parentOf(run)).toBe(host.spanContext().spanId);
  });
});

describe('openTelemetryListener on an agentic run', () => {
  it('records each model turn as a GenAI chat span with token usage, beside its tool calls', async () => {
    const tools = createTestTools();
    const model = scriptedModel([
      { ...toolCall('echo', { value: 'ping' }), usage: { promptTokens: 40, completionTokens: 6, totalTokens: 46 } },
      { ...complete('done'), usage: { promptTokens: 60, completionTokens: 9, totalTokens: 69 } },
    ]);
    const engine = agenticEngine({
      model,
      tools: tools.registry,
      tokenEstimator: heuristicEstimator,
      store: new MemoryStore(),
      onEvent: openTelemetryListener({ tracer }),
    });
    const result = await engine.run({ id: 'goal', goal: 'ping', steps: [{ id: 'ask', tools: ['echo'] }] }).result;
    expect(result.status).toBe('completed');

    const spans = exporter.getFinishedSpans();
    const chats = spans.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats).toHaveLength(2);
    expect(chats.map((span) => span.attributes['gen_ai.usage.input_tokens'])).toEqual([40, 60]);
    expect(chats.map((span) => span.attributes['gen_ai.usage.output_tokens'])).toEqual([6, 9]);
    expect(chats.every((span) => span.kind === SpanKind.CLIENT)).toBe(true);
    expect(chats[0]?.name).toBe(`chat ${chats[0]?.attributes['gen_ai.request.model']}`);
    const attempt = spans.find((span) => span.name === 'attempt 1');
    expect(chats.every((span) => parentOf(span) === attempt?.spanContext().spanId)).toBe(true);
    const toolSpan = spans.find((span) => span.name === 'execute_tool echo');
    expect(parentOf(toolSpan as ReadableSpan)).toBe(attempt?.spanContext().spanId);
    const step = spans.find((span) => span.name === 'step ask');
    expect(step?.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 100, 'gen_ai.usage.output_tokens': 15 });
  });
});

describe('GenAI semantic conventions', () => {
  it('an agentic tool span carries the model’s call id; chat spans the finish reason and the server', async () => {
    const server = await startFakeOpenAIServer({
      replies: [
        { toolCalls: [{ id: 'call_weather_7', name: 'echo', arguments: { value: 'ping' } }] },
        { text: 'The echo answered ping.' },
        complete('done'),
      ],
    });
    try {
      const events: RunEvent[] = [];
      const listener = openTelemetryListener({ tracer });
      const engine = agenticEngine({
        model: openAICompatible({ baseURL: server.url, model: 'fake-model' }),
        tools: createTestTools().registry,
        store: new MemoryStore(),
        onEvent: (event) => {
          events.push(event);
          listener(event);
        },
      });
      const result = await engine.run({ id: 'goal', goal: 'ping', steps: [{ id: 'ask', tools: ['echo'] }] }).result;
      expect(result.status).toBe('completed');

      const spans = exporter.getFinishedSpans();
      const toolSpan = spans.find((span) => span.name === 'execute_tool echo');
      const call = events.find((event) => event.type === 'tool-call');
      expect(call?.executionId).not.toBe('call_weather_7');
      expect(toolSpan?.attributes).toMatchObject({
        'gen_ai.tool.call.id': 'call_weather_7',
        'stepwise.execution.id': call?.executionId,
      });

      const chats = spans.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
      expect(chats.map((span) => span.attributes['gen_ai.response.finish_reasons'])).toEqual([
        ['tool_call'],
        ['stop'],
        ['tool_call'],
      ]);
      for (const chat of chats) {
        expect(chat.attributes).toMatchObject({ 'server.address': '127.0.0.1', 'server.port': server.port });
      }
    } finally {
      await server.close();
    }
  });

  it('an endpoint without a port reports its scheme’s; a model without an endpoint reports no server', async () => {
    const named = (endpoint: string) => ({
      ...scriptedModel([complete('done')]),
      name: 'remote:m',
      endpoint,
    });
    for (const [model, expected] of [
      [named('https://user:pw@models.example.com/v1/chat/completions'), { address: 'models.example.com', port: 443 }],
      [named('http://[::1]:8080/v1/chat/completions'), { address: '::1', port: 8080 }],
      [scriptedModel([complete('done')]), undefined],
    ] as const) {
      exporter.reset();
      const engine = agenticEngine({
        model,
        tools: createTestTools().registry,
        onEvent: openTelemetryListener({ tracer }),
      });
      await engine.run({ id: 'goal', goal: 'done', steps: [{ id: 'ask' }] }).result;
      const chat = exporter.getFinishedSpans().find((span) => span.attributes['gen_ai.operation.name'] === 'chat');
      if (expected) {
        expect(chat?.attributes).toMatchObject({ 'server.address': expected.address, 'server.port': expected.port });
      } else {
        expect(chat?.attributes).not.toHaveProperty('server.address');
        expect(chat?.attributes).not.toHaveProperty('server.port');
      }
    }
  });

  it('a plan’s own tool step has no model call id, only the execution id', async () => {
    const engine = dagEngine({ tools: createTestTools().registry, onEvent: openTelemetryListener({ tracer }) });
    const result = await engine.run(makePlan([{ id: 'a', tool: 'echo', args: { value: 1 } }])).result;
    const toolSpan = exporter.getFinishedSpans().find((span) => span.name === 'execute_tool echo');
    expect(toolSpan?.attributes).not.toHaveProperty('gen_ai.tool.call.id');
    expect(toolSpan?.attributes['stepwise.execution.id']).toBe(result.steps[0]?.executionId);
  });

  it('a failed run’s span has ERROR status and error.type, the code of the step that failed it', async () => {
    const engine = dagEngine({ tools: createTestTools().registry, onEvent: openTelemetryListener({ tracer }) });
    const plan = makePlan([
      { id: 'ok', tool: 'echo', args: {} },
      { id: 'broken', tool: 'fail', args: { code: 'E317', message: 'disk full' }, dependsOn: ['ok'], critical: true },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('failed');
    const run = exporter.getFinishedSpans().find((span) => span.name === `run ${plan.id}`);
    expect(run?.status.code).toBe(SpanStatusCode.ERROR);
    expect(run?.attributes['error.type']).toBe('E317');
  });

  it('a run failed by its model endpoint has the model error’s code', async () => {
    const engine = agenticEngine({
      model: openAICompatible({ baseURL: 'http://127.0.0.1:6000/v1', model: 'm' }),
      tools: createTestTools().registry,
      onEvent: openTelemetryListener({ tracer }),
    });
    const result = await engine.run({ id: 'goal', goal: 'x', steps: [{ id: 'ask' }] }).result;
    expect(result.status).toBe('failed');
    const spans = exporter.getFinishedSpans();
    const run = spans.find((span) => span.name === 'run goal');
    expect(run?.status.code).toBe(SpanStatusCode.ERROR);
    expect(run?.attributes['error.type']).toBe('E407');
    const chat = spans.find((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(chat?.attributes).toMatchObject({
      'error.type': 'E407',
      'server.address': '127.0.0.1',
      'server.port': 6000,
    });
  });

  it('a completed run has neither error.type nor ERROR status', async () => {
    const engine = dagEngine({ tools: createTestTools().registry, onEvent: openTelemetryListener({ tracer }) });
    const plan = makePlan([{ id: 'a', tool: 'echo', args: {} }]);
    await engine.run(plan).result;
    const run = exporter.getFinishedSpans().find((span) => span.name === `run ${plan.id}`);
    expect(run?.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(run?.attributes).not.toHaveProperty('error.type');
  });
});
