import { ErrorCodes } from '@stepwise/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChatRequest, ModelError, openAICompatible, parseRetryAfter, parseToolArguments } from '../src/index.js';
import { complete, type FakeOpenAIServer, startFakeOpenAIServer, toolCall } from '../src/testing/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

const request = (signal = new AbortController().signal): ChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  toolChoice: 'auto',
  signal,
});

describe('openAICompatible against the fake server over real HTTP', () => {
  const servers: FakeOpenAIServer[] = [];
  const serve = async (...args: Parameters<typeof startFakeOpenAIServer>) => {
    const server = await startFakeOpenAIServer(...args);
    servers.push(server);
    return server;
  };
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  it('journals the model’s endpoint with each model call and the model’s call id with each tool call', async () => {
    const server = await serve({
      replies: [{ toolCalls: [{ id: 'call_lookup_3', name: 'echo', arguments: { value: 'ping' } }] }, complete('done')],
    });
    const model = openAICompatible({ baseURL: server.url, model: 'm' });
    const { engine, events } = testEngine({ model, tools: testTools().registry });
    expect((await engine.run(goalPlan([{ id: 'ping', tools: ['echo'] }])).result).status).toBe('completed');
    const endpoints = ofType(events, 'model-call').map((event) => event.endpoint);
    expect(endpoints).toEqual([`${server.url}/chat/completions`, `${server.url}/chat/completions`]);
    const [call] = ofType(events, 'tool-call');
    expect(call).toMatchObject({ tool: 'echo', toolCallId: 'call_lookup_3' });
    expect(call?.executionId).not.toBe('call_lookup_3');
  });

  it('shows its endpoint without credentials or query', () => {
    const model = openAICompatible({ baseURL: 'https://user:secret-pass@models.example.com/v1', model: 'm' });
    expect(model.endpoint).toBe('https://models.example.com/v1/chat/completions');
  });

  it('drives a run: tools and tool results in the OpenAI wire format, bearer auth, usage', async () => {
    const server = await serve({
      replies: [
        { ...toolCall('echo', { value: 'ping' }), usage: { promptTokens: 50, completionTokens: 5, totalTokens: 55 } },
        { ...complete('pong received'), usage: { promptTokens: 70, completionTokens: 8, totalTokens: 78 } },
      ],
    });
    const model = openAICompatible({ baseURL: server.url, model: 'qwen2.5', apiKey: 'test-key-123456' });
    const tools = testTools();
    const { engine, events } = testEngine({ model, tools: tools.registry });
    const result = await engine.run(goalPlan([{ id: 'ping', tools: ['echo'] }])).result;

    expect(result.status).toBe('completed');
    expect(result.steps[0]?.usage).toEqual({ promptTokens: 120, completionTokens: 13, totalTokens: 133 });
    expect(tools.log.count('echo')).toBe(1);
    const [first, second] = server.requests;
    expect(first?.headers.authorization).toBe('Bearer test-key-123456');
    expect(first?.body).toMatchObject({ model: 'qwen2.5', stream: false, tool_choice: 'auto' });
    expect(
      ((first?.body?.tools ?? []) as { type: string; function: { name: string } }[]).map((tool) => tool.function.name),
    ).toEqual(['echo', 'complete_step', 'report_blocked']);
    const messages = (second?.body?.messages ?? []) as Record<string, unknown>[];
    expect(messages.at(-2)).toMatchObject({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_0_0', type: 'function', function: { name: 'echo', arguments: '{"value":"ping"}' } }],
    });
    expect(messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_0_0', content: '{"value":"ping"}' });
    expect(ofType(events, 'model-call')[0]?.model).toBe('openai-compatible:qwen2.5');
  });

  it('turns invalid JSON arguments and unknown tool names into correction turns', async () => {
    const server = await serve({
      replies: [
        toolCall('echo', '{"value": "unterminated'),
        toolCall('summon_dragon', { size: 'large' }),
        toolCall('echo', { value: 'fixed' }),
        complete('done'),
      ],
    });
    const tools = testTools();
    const { engine } = testEngine({
      model: openAICompatible({ baseURL: server.url, model: 'm' }),
      tools: tools.registry,
      limits: { maxToolFailures: 5 },
    });
    const result = await engine.run(goalPlan([{ id: 'x' }])).result;
    expect(result.status).toBe('completed');
    const lastMessage = (index: number) =>
      ((server.requests[index]?.body?.messages ?? []) as { content: string }[]).at(-1);
    expect(lastMessage(1)?.content).toMatch(/^ERROR E202: arguments are not valid JSON/);
    // The invalid arguments are echoed back exactly as the model sent them.
    const echoed = (
      (server.requests[1]?.body?.messages ?? []) as { tool_calls?: { function: { arguments: string } }[] }[]
    ).at(-2);
    expect(echoed?.tool_calls?.[0]?.function.arguments).toBe('{"value": "unterminated');
    expect(lastMessage(2)?.content).toMatch(/^ERROR E201: there is no tool "summon_dragon"/);
    expect(tools.log.calls.map((call) => call.args)).toEqual([{ value: 'fixed' }]);
  });

  it('fails the step with a clear E407 on empty choices and on a body that is not JSON, without retrying', async () => {
    for (const body of [{ id: 'x', choices: [] }, '<html>502 Bad Gateway</html>']) {
      const server = await serve({ replies: [{ body }] });
      const { engine } = testEngine({
        model: openAICompatible({ baseURL: server.url, model: 'm' }),
        tools: testTools().registry,
      });
      const result = await engine.run(goalPlan([{ id: 'x' }])).result;
      expect(result.steps[0]?.error?.code).toBe(ErrorCodes.MODEL_ERROR);
      expect(result.steps[0]?.error?.message).toMatch(/no choices|not JSON/);
      expect(server.requests).toHaveLength(1);
    }
  });

  it('retries 429 and 5xx, honouring Retry-After, then succeeds', async () => {
    const server = await serve({
      replies: [
        { status: 429, headers: { 'retry-after-ms': '120' }, body: { error: { message: 'rate limited' } } },
        { status: 503, body: 'upstream unavailable' },
        complete('made it'),
      ],
    });
    const { engine, events } = testEngine({
      model: openAICompatible({ baseURL: server.url, model: 'm' }),
      tools: testTools().registry,
      retry: { initialDelayMs: 10, jitter: 0 },
    });
    const started = Date.now();
    const result = await engine.run(goalPlan([{ id: 'x' }])).result;
    expect(result.status).toBe('completed');
    expect(Date.now() - started).toBeGreaterThanOrEqual(120);
    const failures = ofType(events, 'model-call').filter((event) => event.error);
    expect(failures.map((event) => event.error?.details?.status)).toEqual([429, 503]);
    expect(failures[0]?.error?.message).toContain('rate limited');
    expect(failures[0]?.error?.details?.retryInMs).toBe(120);
  });

  it('tolerates server differences: object arguments, missing ids, odd finish reasons, no usage', async () => {
    const server = await serve({
      replies: [
        {
          body: {
            choices: [
              {
                message: {
                  role: 'assistant',
                  content: '',
                  tool_calls: [{ function: { name: 'echo', arguments: { value: 7 } } }],
                },
                finish_reason: 'function_call',
              },
            ],
          },
        },
        {
          body: {
            choices: [
              {
                message: {
                  content: [
                    { type: 'text', text: 'thinking ' },
                    { type: 'text', text: 'aloud' },
                  ],
                },
                finish_reason: 'eos',
              },
            ],
          },
        },
      ],
    });
    const model = openAICompatible({ baseURL: server.url, model: 'm' });
    const first = await model.generate(request());
    expect(first.toolCalls).toHaveLength(1);
    expect(first.toolCalls[0]).toMatchObject({ name: 'echo', arguments: { value: 7 } });
    expect(first.toolCalls[0]?.id).toMatch(/^call_/);
    expect(first.finishReason).toBe('tool-calls');
    expect(first.usage).toBeUndefined();
    const second = await model.generate(request());
    expect(second).toMatchObject({ text: 'thinking aloud', finishReason: 'stop', toolCalls: [] });
  });

  it('reports a refused connection as a ModelError that is not retried, and honours abort', async () => {
    const server = await serve({ replies: [] });
    const port = server.port;
    await server.close();
    servers.pop();
    const model = openAICompatible({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'm' });
    const error = await model.generate(request()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).retryable).toBe(false);

    const slow = await serve({ replies: [{ ...complete('late'), delayMs: 5_000 }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 50);
    const aborted = await openAICompatible({ baseURL: slow.url, model: 'm' })
      .generate(request(controller.signal))
      .catch((caught: unknown) => caught);
    expect(aborted).toBeInstanceOf(ModelError);
  });
});

describe('wire parsing helpers', () => {
  it('parses Retry-After as seconds, an HTTP date, or retry-after-ms', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '3' }))).toBe(3_000);
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter({ 'retry-after': 'Wed, 01 Jan 2025 00:00:10 GMT' }, now)).toBe(10_000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  it('parses tool arguments from strings and objects, flagging what is not a JSON object', () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ arguments: { a: 1 }, rawArguments: '{"a":1}' });
    expect(parseToolArguments({ a: 1 })).toEqual({ arguments: { a: 1 } });
    expect(parseToolArguments('')).toEqual({ arguments: {}, rawArguments: '' });
    expect(parseToolArguments(undefined)).toEqual({ arguments: {} });
    expect(parseToolArguments('[1,2]').parseError).toMatch(/an array/);
    expect(parseToolArguments('{oops').parseError).toMatch(/not valid JSON/);
    expect(parseToolArguments(42).parseError).toMatch(/number/);
  });
});
