import type { LanguageModelV3GenerateResult, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { ErrorCodes, type LiveEvent } from '@stepwise/core';
import { APICallError } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { type ChatRequest, fromAISDK, ModelError } from '../src/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

const usage = (input: number, output: number): LanguageModelV3GenerateResult['usage'] => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

const PIECES = ['Reading ', 'the file, ', 'then done.'];
const FINISH = { unified: 'tool-calls', raw: 'tool_calls' } as const;

/** The same answer, streamed in pieces or generated whole. */
function answeringModel(complete = false) {
  const call = complete
    ? { toolName: 'complete_step', input: '{"summary":"streamed through the sdk"}' }
    : { toolName: 'echo', input: '{"value":"x"}' };
  return new MockLanguageModelV3({
    provider: 'mock-provider',
    modelId: 'mock-model',
    doGenerate: async () => ({
      content: [
        { type: 'text', text: PIECES.join('') },
        { type: 'tool-call', toolCallId: 'tc-1', ...call },
      ],
      finishReason: FINISH,
      usage: usage(30, 9),
      warnings: [],
    }),
    doStream: async () => ({
      stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't1' },
        ...PIECES.map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
        { type: 'text-end', id: 't1' },
        { type: 'tool-call', toolCallId: 'tc-1', ...call },
        { type: 'finish', finishReason: FINISH, usage: usage(30, 9) },
      ]),
    }),
  });
}

const request = (onDelta?: (text: string) => void): ChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [
    { name: 'echo', description: 'echo', parameters: { type: 'object', properties: { value: { type: 'string' } } } },
  ],
  toolChoice: 'auto',
  signal: new AbortController().signal,
  ...(onDelta ? { onDelta } : {}),
});

describe('fromAISDK streaming (streamText while someone watches)', () => {
  it('tells each piece of text and returns what generateText returns for the same answer', async () => {
    const pieces: string[] = [];
    const streamed = await fromAISDK(answeringModel()).generate(request((text) => pieces.push(text)));
    const whole = await fromAISDK(answeringModel()).generate(request());
    expect(pieces).toEqual(PIECES);
    expect(streamed).toEqual(whole);
    expect(streamed.toolCalls[0]).toMatchObject({ id: 'tc-1', name: 'echo', arguments: { value: 'x' } });
    expect(streamed.usage).toEqual({ promptTokens: 30, completionTokens: 9, totalTokens: 39 });
  });

  it('does not stream with stream: false', async () => {
    const pieces: string[] = [];
    await fromAISDK(answeringModel(), { stream: false }).generate(request((text) => pieces.push(text)));
    expect(pieces).toEqual([]);
  });

  it('turns an error part of the stream into the same typed ModelError a thrown one gives', async () => {
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([
          { type: 'stream-start', warnings: [] },
          {
            type: 'error',
            error: new APICallError({
              message: 'Too Many Requests',
              url: 'https://example.invalid/v1/chat',
              requestBodyValues: {},
              statusCode: 429,
              responseHeaders: { 'retry-after': '2' },
              isRetryable: true,
            }),
          },
        ]),
      }),
    });
    const error = await fromAISDK(model)
      .generate(request(() => undefined))
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ code: ErrorCodes.MODEL_ERROR, retryable: true, retryAfterMs: 2000 });
  });

  it("shows a goal step's answer as model-delta live events", async () => {
    const { engine, events } = testEngine({ model: fromAISDK(answeringModel(true)), tools: testTools().registry });
    const handle = engine.run(goalPlan([{ id: 'sdk', tools: ['echo'] }]));
    const live: LiveEvent[] = [];
    handle.onLive((event) => live.push(event));
    expect((await handle.result).status).toBe('completed');
    expect(
      live
        .filter((event) => event.type === 'model-delta')
        .map((event) => event.text)
        .join(''),
    ).toBe(PIECES.join(''));
    expect(ofType(events, 'model-call')[0]?.response).toMatchObject({ text: PIECES.join('') });
  });
});
