import type { TokenUsage } from '@stepwise/core';
import type { ChatMessage, ChatModel, ChatResponse, ChatToolCall, FinishReason } from './chat-model.js';
import { ModelError, parseRetryAfter, toModelError } from './model-error.js';
import { parseToolArguments } from './openai-compatible.js';

/**
 * Any Vercel AI SDK language model (`openai('gpt-4o')`, `ollama('qwen2.5')`, a `MockLanguageModelV3`…).
 * Typed structurally so this package's types do not require `ai` to be installed.
 */
export interface AISDKLanguageModel {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
}

export interface FromAISDKOptions {
  /** Journaled as the model's name. Default `<provider>:<modelId>`. */
  readonly name?: string;
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
  /** Passed to `generateText` as `providerOptions`. */
  readonly providerOptions?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * Use `streamText` while the engine listens for the answer (live output), so its text shows as
   * the model writes it; the answer returned is the same. Default true; `false` never streams.
   */
  readonly stream?: boolean;
}

/** What `generateText` answers, and what a streamed answer adds up to. */
interface GeneratedAnswer {
  text: string;
  toolCalls: readonly {
    toolCallId: string;
    toolName: string;
    input: unknown;
    invalid?: boolean;
    error?: unknown;
  }[];
  finishReason: string;
  usage: { inputTokens: number | undefined; outputTokens: number | undefined; totalTokens: number | undefined };
  response?: { modelId?: string };
}

/** The parts of `streamText`'s result this adapter reads. */
interface StreamedAnswer {
  readonly fullStream: AsyncIterable<{ type: string; text?: string; error?: unknown }>;
  readonly text: PromiseLike<string>;
  readonly toolCalls: PromiseLike<GeneratedAnswer['toolCalls']>;
  readonly finishReason: PromiseLike<string>;
  readonly usage: PromiseLike<GeneratedAnswer['usage']>;
  readonly response: PromiseLike<{ modelId?: string }>;
}

// The subset of the `ai` package this adapter uses, so the optional peer is loaded only when called.
interface AIModule {
  generateText(options: Record<string, unknown>): Promise<GeneratedAnswer>;
  streamText(options: Record<string, unknown>): StreamedAnswer;
  jsonSchema(schema: unknown): unknown;
  tool(definition: Record<string, unknown>): unknown;
  APICallError: { isInstance(error: unknown): boolean };
}

let loading: Promise<AIModule> | undefined;

function loadAI(): Promise<AIModule> {
  loading ??= (import('ai') as unknown as Promise<AIModule>).catch((error: unknown) => {
    loading = undefined;
    throw new ModelError('fromAISDK needs the "ai" package (npm install ai)', { cause: error });
  });
  return loading;
}

type ModelMessage = Record<string, unknown>;

function toModelMessages(messages: readonly ChatMessage[]): { system: string | undefined; messages: ModelMessage[] } {
  const system: string[] = [];
  const converted: ModelMessage[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        // The AI SDK warns about system messages inside `messages`; they go to `system` instead.
        if (converted.length === 0) system.push(message.content);
        else converted.push({ role: 'user', content: message.content });
        break;
      case 'user':
        converted.push({ role: 'user', content: message.content });
        break;
      case 'assistant':
        converted.push({
          role: 'assistant',
          content: [
            ...(message.content ? [{ type: 'text', text: message.content }] : []),
            ...(message.toolCalls ?? []).map((call) => ({
              type: 'tool-call',
              toolCallId: call.id,
              toolName: call.name,
              input: call.arguments,
            })),
          ],
        });
        break;
      case 'tool': {
        const part = {
          type: 'tool-result',
          toolCallId: message.toolCallId,
          toolName: message.name,
          output: { type: 'text', value: message.content },
        };
        // Consecutive tool results share one tool message, as the AI SDK expects.
        const previous = converted.at(-1);
        if (previous?.role === 'tool') (previous.content as unknown[]).push(part);
        else converted.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return { system: system.length > 0 ? system.join('\n\n') : undefined, messages: converted };
}

function toFinishReason(reason: string, hasToolCalls: boolean): FinishReason {
  if (hasToolCalls) return 'tool-calls';
  switch (reason) {
    case 'stop':
    case 'length':
    case 'content-filter':
    case 'tool-calls':
    case 'error':
      return reason;
    default:
      return 'other';
  }
}

type GenerateResult = GeneratedAnswer;

/**
 * `streamText`, telling `onDelta` each piece of text: the answer as `generateText` gives it. An
 * error part (the SDK does not throw from a stream) is thrown, so it is classified like any failure.
 */
async function streamAnswer(
  ai: AIModule,
  settings: Record<string, unknown>,
  onDelta: (text: string) => void,
): Promise<GeneratedAnswer> {
  const streamed = ai.streamText({ ...settings, onError: () => undefined });
  for await (const part of streamed.fullStream) {
    if (part.type === 'text-delta' && part.text) onDelta(part.text);
    else if (part.type === 'error') throw part.error;
  }
  const [text, toolCalls, finishReason, usage, response] = await Promise.all([
    streamed.text,
    streamed.toolCalls,
    streamed.finishReason,
    streamed.usage,
    streamed.response,
  ]);
  return { text, toolCalls, finishReason, usage, response };
}

function toToolCall(call: GenerateResult['toolCalls'][number]): ChatToolCall {
  // Invalid calls (unknown tool, unparsable input) come back flagged; the raw input is then text.
  if (typeof call.input === 'string')
    return { id: call.toolCallId, name: call.toolName, ...parseToolArguments(call.input) };
  return { id: call.toolCallId, name: call.toolName, ...parseToolArguments(call.input ?? {}) };
}

function toUsage(usage: GenerateResult['usage']): TokenUsage | undefined {
  if (usage.inputTokens === undefined && usage.outputTokens === undefined) return undefined;
  const promptTokens = usage.inputTokens ?? 0;
  const completionTokens = usage.outputTokens ?? 0;
  return { promptTokens, completionTokens, totalTokens: usage.totalTokens ?? promptTokens + completionTokens };
}

function toError(ai: AIModule, error: unknown): ModelError {
  if (ai.APICallError.isInstance(error)) {
    const apiError = error as {
      message: string;
      statusCode?: number;
      isRetryable: boolean;
      responseHeaders?: Record<string, string>;
    };
    const retryAfterMs = parseRetryAfter(apiError.responseHeaders);
    return new ModelError(`model call failed: ${apiError.message}`, {
      retryable: apiError.isRetryable,
      ...(apiError.statusCode === undefined ? {} : { status: apiError.statusCode }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      cause: error,
    });
  }
  return toModelError(error);
}

/**
 * Wraps any Vercel AI SDK language model as a ChatModel, through the `ai` package's public
 * `generateText`, or `streamText` while someone watches the run live (one step, tools without
 * `execute`, no SDK retries: the engine retries).
 * `ai` is an optional peer dependency, loaded on the first call.
 */
export function fromAISDK(model: AISDKLanguageModel, options: FromAISDKOptions = {}): ChatModel {
  return {
    name: options.name ?? `${model.provider}:${model.modelId}`,
    async generate(request): Promise<ChatResponse> {
      const ai = await loadAI();
      const { system, messages } = toModelMessages(request.messages);
      const tools = Object.fromEntries(
        request.tools.map((definition) => [
          definition.name,
          ai.tool({ description: definition.description, inputSchema: ai.jsonSchema(definition.parameters) }),
        ]),
      );
      const settings = {
        model,
        ...(system === undefined ? {} : { system }),
        messages,
        ...(request.tools.length > 0 ? { tools, toolChoice: request.toolChoice } : {}),
        maxRetries: 0,
        abortSignal: request.signal,
        ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
        ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens }),
        ...(options.providerOptions === undefined ? {} : { providerOptions: options.providerOptions }),
      };
      const { onDelta } = request;
      let result: GenerateResult;
      try {
        // Streamed while someone watches the run live (see `ChatRequest.onDelta`), unless turned off.
        result =
          onDelta && options.stream !== false
            ? await streamAnswer(ai, settings, onDelta)
            : await ai.generateText(settings);
      } catch (error) {
        throw toError(ai, error);
      }
      const toolCalls = result.toolCalls.map(toToolCall);
      const usage = toUsage(result.usage);
      return {
        text: result.text,
        toolCalls,
        finishReason: toFinishReason(result.finishReason, toolCalls.length > 0),
        ...(usage ? { usage } : {}),
        ...(result.response?.modelId ? { model: result.response.modelId } : {}),
      };
    },
  };
}
