import { ErrorCodes, type LiveEvent } from '@stepwise/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChatRequest, type ChatResponse, ModelError, openAICompatible } from '../src/index.js';
import { complete, type FakeOpenAIServer, type FakeReply, startFakeOpenAIServer } from '../src/testing/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

const request = (onDelta?: (text: string) => void): ChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  toolChoice: 'auto',
  signal: new AbortController().signal,
  ...(onDelta ? { onDelta } : {}),
});

const TURN: FakeReply = {
  text: 'Reading the file first, then fixing it.',
  toolCalls: [
    { id: 'call_a', name: 'file_read', arguments: { path: 'src/a.ts' } },
    { id: 'call_b', name: 'echo', arguments: { value: 'a "quoted" value, with commas' } },
  ],
  usage: { promptTokens: 40, completionTokens: 12, totalTokens: 52 },
};

describe('openAICompatible streaming (stream: true) against the fake server over real HTTP', () => {
  const servers: FakeOpenAIServer[] = [];
  const serve = async (...args: Parameters<typeof startFakeOpenAIServer>) => {
    const server = await startFakeOpenAIServer(...args);
    servers.push(server);
    return server;
  };
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });

  it('tells each piece of text as it arrives and returns what the same turn gives unstreamed', async () => {
    let seenFirst: (() => void) | undefined;
    const firstSeen = new Promise<void>((resolve) => {
      seenFirst = resolve;
    });
    // The server holds the stream after its first word until the client has told it: no buffering.
    const server = await serve({
      replies: [TURN, TURN],
      betweenChunks: (_request, chunk) => (chunk === 0 ? firstSeen : undefined),
    });
    const model = openAICompatible({ baseURL: server.url, model: 'm' });
    const pieces: string[] = [];
    const streamed = await model.generate(
      request((text) => {
        pieces.push(text);
        seenFirst?.();
      }),
    );
    const whole: ChatResponse = await model.generate(request());
    expect(pieces[0]).toBe('Reading ');
    expect(pieces.join('')).toBe(TURN.text);
    expect(streamed).toEqual(whole);
    expect(streamed.toolCalls.map((call) => call.arguments)).toEqual([
      { path: 'src/a.ts' },
      { value: 'a "quoted" value, with commas' },
    ]);
    expect(streamed.usage).toEqual({ promptTokens: 40, completionTokens: 12, totalTokens: 52 });
    expect(server.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(server.requests[1]?.body).toMatchObject({ stream: false });
  });

  it('streams only when asked to and allowed: `stream: false` never does', async () => {
    const server = await serve({ replies: [{ text: 'plain' }] });
    const model = openAICompatible({ baseURL: server.url, model: 'm', stream: false });
    const pieces: string[] = [];
    expect((await model.generate(request((text) => pieces.push(text)))).text).toBe('plain');
    expect(pieces).toEqual([]);
    expect(server.requests[0]?.body).toMatchObject({ stream: false });
  });

  it('reads a whole completion from a server that ignores `stream`', async () => {
    const server = await serve({
      replies: [
        { body: { choices: [{ message: { role: 'assistant', content: 'all at once' }, finish_reason: 'stop' }] } },
      ],
    });
    const model = openAICompatible({ baseURL: server.url, model: 'm' });
    expect((await model.generate(request(() => undefined))).text).toBe('all at once');
  });

  it.each([
    ['a chunk that is not JSON', 'data: {"choices": [\n\n', /stream chunk that is not JSON/],
    [
      'an error mid-stream',
      'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"error":{"message":"overloaded"}}\n\n',
      /error in place of a completion/,
    ],
    [
      'a tool call index far out of range',
      'data: {"choices":[{"delta":{"tool_calls":[{"index":1000000000,"function":{"name":"x"}}]}}]}\n\n',
      /tool call index/,
    ],
    ['no choices at all', 'data: [DONE]\n\n', /with no choices/],
  ])('refuses %s with a typed, non-retryable E407 naming the endpoint', async (_, body, message) => {
    const server = await serve({ replies: [{ headers: { 'content-type': 'text/event-stream' }, body }] });
    const model = openAICompatible({ baseURL: server.url, model: 'm' });
    const error = await model.generate(request(() => undefined)).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ code: ErrorCodes.MODEL_ERROR, retryable: false });
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain(server.url);
  });

  it("shows a goal step's answer to live listeners as model-delta events before the model call is journaled", async () => {
    const server = await serve({
      replies: [{ text: 'All three files are fixed and the tests pass.', toolCalls: complete('fixed').toolCalls }],
    });
    const model = openAICompatible({ baseURL: server.url, model: 'm' });
    const { engine, events } = testEngine({ model, tools: testTools().registry });
    const handle = engine.run(goalPlan([{ id: 'fix', tools: ['echo'] }]));
    const live: { event: LiveEvent; journaledCalls: number }[] = [];
    handle.onLive((event) => live.push({ event, journaledCalls: ofType(events, 'model-call').length }));
    expect((await handle.result).status).toBe('completed');
    const deltas = live.filter(({ event }) => event.type === 'model-delta');
    expect(deltas.map(({ event }) => event.text).join('')).toBe('All three files are fixed and the tests pass.');
    expect(deltas.every(({ event }) => event.stepId === 'fix')).toBe(true);
    expect(deltas[0]?.journaledCalls).toBe(0);
    expect((ofType(events, 'model-call')[0]?.response as { text?: string } | undefined)?.text).toBe(
      'All three files are fixed and the tests pass.',
    );
  });
});
