import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { ErrorCodes } from '@stepwise/core';
import { APICallError } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { fromAISDK, ModelError } from '../src/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

const usage = (input: number, output: number): LanguageModelV3GenerateResult['usage'] => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

function toolCallResult(toolName: string, input: string, id: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId: id, toolName, input }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: usage(40, 6),
    warnings: [],
  };
}

describe('fromAISDK with MockLanguageModelV3', () => {
  it('runs a goal step through generateText: tools offered, tool results returned, usage counted', async () => {
    const calls: LanguageModelV3CallOptions[] = [];
    const model = new MockLanguageModelV3({
      provider: 'mock-provider',
      modelId: 'mock-model',
      doGenerate: async (options) => {
        calls.push(options);
        if (calls.length === 1) return toolCallResult('echo', '{"value":"from the sdk"}', 'tc-1');
        if (calls.length === 2) return toolCallResult('not_a_tool', '{}', 'tc-2');
        return toolCallResult('complete_step', '{"summary":"sdk path works"}', 'tc-3');
      },
    });
    const tools = testTools();
    const { engine, events } = testEngine({ model: fromAISDK(model), tools: tools.registry });
    const result = await engine.run(goalPlan([{ id: 'sdk', description: 'echo through the AI SDK', tools: ['echo'] }]))
      .result;

    expect(result.status).toBe('completed');
    expect(result.steps[0]?.output).toMatchObject({ summary: 'sdk path works' });
    expect(result.steps[0]?.usage).toEqual({ promptTokens: 120, completionTokens: 18, totalTokens: 138 });
    expect(tools.log.calls.map((call) => call.args)).toEqual([{ value: 'from the sdk' }]);
    expect(ofType(events, 'model-call')[0]?.model).toBe('mock-provider:mock-model');

    const first = calls[0]!;
    expect(first.tools?.map((tool) => tool.name)).toEqual(['echo', 'complete_step', 'report_blocked']);
    expect(first.prompt[0]).toMatchObject({ role: 'system' });
    expect(JSON.stringify(first.prompt[1])).toContain('echo through the AI SDK');

    // The tool result reached the model as an AI SDK tool message, answering the right call.
    const second = calls[1]!;
    const toolMessage = second.prompt.at(-1);
    expect(toolMessage?.role).toBe('tool');
    expect(toolMessage?.content[0]).toMatchObject({
      type: 'tool-result',
      toolCallId: 'tc-1',
      toolName: 'echo',
      output: { type: 'text', value: '{"value":"from the sdk"}' },
    });
    // An unknown tool comes back as an error the model can correct.
    expect(JSON.stringify(calls[2]!.prompt.at(-1))).toContain('E201');
  });

  it('maps a retryable APICallError with Retry-After to a transient ModelError', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new APICallError({
          message: 'Too Many Requests',
          url: 'https://example.invalid/v1/chat',
          requestBodyValues: {},
          statusCode: 429,
          responseHeaders: { 'retry-after': '2' },
          isRetryable: true,
        });
      },
    });
    const error = await fromAISDK(model)
      .generate({
        messages: [{ role: 'user', content: 'hi' }],
        tools: [],
        toolChoice: 'auto',
        signal: new AbortController().signal,
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ code: ErrorCodes.MODEL_ERROR, retryable: true, status: 429, retryAfterMs: 2_000 });
  });

  it('fails the step with E407 when the SDK model throws a non-retryable error', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new APICallError({
          message: 'invalid api key',
          url: 'https://example.invalid',
          requestBodyValues: {},
          statusCode: 401,
          isRetryable: false,
        });
      },
    });
    const { engine } = testEngine({ model: fromAISDK(model), tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'x' }])).result;
    expect(result.steps[0]?.error).toMatchObject({ code: ErrorCodes.MODEL_ERROR, retryable: false });
    expect(result.steps[0]?.error?.message).toContain('invalid api key');
    expect(model.doGenerateCalls).toHaveLength(1);
  });
});
