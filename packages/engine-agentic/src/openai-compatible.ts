import { randomUUID } from 'node:crypto';
import { createRedactor, type TokenUsage } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import type { ChatMessage, ChatModel, ChatResponse, ChatToolCall, FinishReason } from './chat-model.js';
import {
  connectionError,
  displayUrl,
  isTransientStatus,
  ModelError,
  type ModelFailureReason,
  parseRetryAfter,
} from './model-error.js';
import { readCompletionStream, StreamChunkError } from './openai-stream.js';

export interface OpenAICompatibleOptions {
  /** Base URL up to and including the version segment, e.g. `http://localhost:11434/v1`. */
  readonly baseURL: string;
  /** Model name as the endpoint knows it, e.g. `gpt-4o-mini`, `qwen2.5-coder:7b`. */
  readonly model: string;
  /** Sent as `Authorization: Bearer …` when given. Local servers usually need none. */
  readonly apiKey?: string;
  /** Extra request headers (organisation, project, proxies). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Default: none (the endpoint's default). */
  readonly temperature?: number;
  /** Sent as `max_tokens`. Default: none. */
  readonly maxOutputTokens?: number;
  /** Merged into the request body for vendor options (`{ options: { num_ctx: 8192 } }` for Ollama). */
  readonly body?: Readonly<Record<string, unknown>>;
  /** Default: the global `fetch`. */
  readonly fetch?: typeof fetch;
  /**
   * Ask for the answer as a stream (`stream: true`, with `stream_options.include_usage`) when the
   * engine listens for it (live output), so its text shows while the model writes. Default true; a
   * server that answers with a whole completion anyway is read as one. `false` never streams.
   */
  readonly stream?: boolean;
  /** Journaled as the model's name. Default `openai-compatible:<model>`. */
  readonly name?: string;
}

interface WireToolCall {
  id?: unknown;
  type?: unknown;
  function?: { name?: unknown; arguments?: unknown };
  name?: unknown;
  arguments?: unknown;
}

interface WireMessage {
  content?: unknown;
  tool_calls?: unknown;
  function_call?: unknown;
}

function toWireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        // Several servers reject `content: ""` next to tool calls; null is what OpenAI itself sends.
        content: message.content === '' && message.toolCalls?.length ? null : message.content,
        ...(message.toolCalls?.length
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: call.rawArguments ?? JSON.stringify(call.arguments) },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return { role: message.role, content: message.content };
  }
}

/** Arguments arrive as a JSON string (OpenAI, vLLM), an object (some Ollama versions) or not at all. */
export function parseToolArguments(raw: unknown): Pick<ChatToolCall, 'arguments' | 'rawArguments' | 'parseError'> {
  if (raw === undefined || raw === null) return { arguments: {} };
  if (typeof raw === 'object' && !Array.isArray(raw)) return { arguments: raw as Record<string, unknown> };
  if (typeof raw !== 'string') {
    return {
      arguments: {},
      parseError: `arguments must be a JSON object, got ${Array.isArray(raw) ? 'an array' : typeof raw}`,
    };
  }
  if (raw.trim() === '') return { arguments: {}, rawArguments: raw };
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return { arguments: parsed as Record<string, unknown>, rawArguments: raw };
    }
    return {
      arguments: {},
      rawArguments: raw,
      parseError: `arguments must be a JSON object, got ${Array.isArray(parsed) ? 'an array' : typeof parsed}`,
    };
  } catch (error) {
    return {
      arguments: {},
      rawArguments: raw,
      parseError: `arguments are not valid JSON (${messageOf(error)})`,
    };
  }
}

function readToolCalls(message: WireMessage): ChatToolCall[] {
  const wire: WireToolCall[] = Array.isArray(message.tool_calls)
    ? (message.tool_calls as WireToolCall[])
    : typeof message.function_call === 'object' && message.function_call !== null
      ? [{ function: message.function_call as WireToolCall['function'] }]
      : [];
  return wire
    .filter((call): call is WireToolCall => typeof call === 'object' && call !== null)
    .map((call) => {
      const name = call.function?.name ?? call.name;
      const id = typeof call.id === 'string' && call.id !== '' ? call.id : `call_${randomUUID().slice(0, 8)}`;
      return {
        id,
        name: typeof name === 'string' ? name : '',
        ...parseToolArguments(call.function?.arguments ?? call.arguments),
      };
    });
}

function readText(content: unknown): string {
  if (typeof content === 'string') return content;
  // Some servers send content parts: [{ type: 'text', text }].
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : ''))
      .join('');
  }
  return '';
}

function readFinishReason(raw: unknown, hasToolCalls: boolean): FinishReason {
  // Servers disagree (`tool_calls`, `function_call`, `eos`, null…); tool calls decide when present.
  if (hasToolCalls) return 'tool-calls';
  switch (raw) {
    case 'stop':
    case 'eos':
    case 'end_turn':
    case 'stop_sequence':
    case null:
    case undefined:
      return 'stop';
    case 'length':
    case 'max_tokens':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    case 'tool_calls':
    case 'function_call':
      return 'tool-calls';
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}

function readUsage(raw: unknown): TokenUsage | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const usage = raw as Record<string, unknown>;
  const prompt = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : undefined;
  const completion = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : undefined;
  if (prompt === undefined && completion === undefined) return undefined;
  const total = typeof usage.total_tokens === 'number' ? usage.total_tokens : (prompt ?? 0) + (completion ?? 0);
  return { promptTokens: prompt ?? 0, completionTokens: completion ?? 0, totalTokens: total };
}

function errorMessageOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    const nested = (parsed.error as { message?: unknown } | undefined)?.message;
    if (typeof nested === 'string') return nested;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: the raw text is the message.
  }
  return body.slice(0, 500);
}

// What servers say when tools reach a model or server that cannot call them: llama.cpp without
// --jinja, vLLM without --enable-auto-tool-choice, Ollama with a model lacking a tool template.
const TOOLS_UNSUPPORTED =
  /--jinja|tool.?choice|tool.?call.?parser|does not support tools|tools? (are |is )?not supported/i;
const MODEL_NOT_FOUND = /model\b.*\b(not found|does not exist|not exist)|no such model|unknown model/i;

function httpFailure(status: number, message: string): { reason: ModelFailureReason; hint: string } {
  if (status === 401 || status === 403) {
    return { reason: 'unauthorized', hint: 'the API key is missing or refused; check the key variable (apiKeyEnv)' };
  }
  if (TOOLS_UNSUPPORTED.test(message)) {
    return {
      reason: 'tools-unsupported',
      hint: 'the server does not accept tool calls: start llama.cpp with --jinja, vLLM with --enable-auto-tool-choice --tool-call-parser <parser>, or use an Ollama model that supports tools',
    };
  }
  if ((status === 404 || status === 400) && MODEL_NOT_FOUND.test(message)) {
    return { reason: 'model-not-found', hint: 'the server does not have this model (pull or load it, or fix "model")' };
  }
  if (status === 404) {
    return { reason: 'endpoint-not-found', hint: 'no chat completions here; baseURL usually ends in /v1' };
  }
  return { reason: 'http', hint: '' };
}

/** A response with an error status, naming the URL, the model and what the status most likely means. */
function httpError(url: string, model: string, response: Response, text: string): ModelError {
  const message = errorMessageOf(text);
  const { reason, hint } = httpFailure(response.status, message);
  const retryAfterMs = parseRetryAfter(response.headers);
  return new ModelError(
    `the model endpoint ${displayUrl(url)} answered ${response.status} for model "${model}": ${message}${hint ? ` (${hint})` : ''}`,
    {
      status: response.status,
      // A server that cannot call tools says so with a 500 on llama.cpp: asking again will not help.
      retryable: reason === 'http' && isTransientStatus(response.status),
      details: { url: displayUrl(url), reason },
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    },
  );
}

/** Where a response body came from, for the errors about it. */
export interface ChatCompletionSource {
  readonly url: string;
  readonly status: number;
  /** The response's `content-type` header. */
  readonly contentType: string | null;
  /** Values that must not appear in an excerpt of the body (the API key). */
  readonly secrets?: readonly string[];
}

/** How much of an unusable body an error quotes: enough to recognise an HTML page or a proxy's message. */
const EXCERPT_LENGTH = 200;

/** A response whose body is not a chat completion: names where it came from and quotes it, redacted. */
function invalidResponse(problem: string, text: string, source: ChatCompletionSource | undefined): ModelError {
  const redactor = createRedactor({ secrets: source?.secrets ?? [] });
  const flat = text.replace(/\s+/g, ' ').trim();
  const excerpt = redactor.redactText(flat.length > EXCERPT_LENGTH ? `${flat.slice(0, EXCERPT_LENGTH)}…` : flat);
  const quoted = excerpt === '' ? ' (empty body)' : `: ${excerpt}`;
  if (!source)
    return new ModelError(`the endpoint's response ${problem}${quoted}`, { details: { reason: 'invalid-response' } });
  const url = displayUrl(source.url);
  const contentType = source.contentType ?? 'no content type';
  return new ModelError(`the model endpoint ${url} answered ${source.status} (${contentType}) ${problem}${quoted}`, {
    status: source.status,
    details: { url, contentType, reason: 'invalid-response' },
  });
}

/**
 * Reads a chat-completions response body into a ChatResponse, or throws a non-retryable ModelError
 * that quotes the start of the body (and names the URL, status and content type when `source` is given).
 */
export function parseChatCompletion(text: string, source?: ChatCompletionSource): ChatResponse {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidResponse('that is not JSON', text, source);
  }
  if (typeof body !== 'object' || body === null)
    throw invalidResponse('with a JSON value, not an object', text, source);
  const record = body as { choices?: unknown; usage?: unknown; model?: unknown; error?: unknown };
  if (record.error !== undefined) throw invalidResponse('with an error in place of a completion', text, source);
  if (!Array.isArray(record.choices) || record.choices.length === 0) {
    throw invalidResponse('with no choices', text, source);
  }
  const choice = record.choices[0] as { message?: unknown; finish_reason?: unknown } | undefined;
  const message = (typeof choice?.message === 'object' && choice.message !== null ? choice.message : {}) as WireMessage;
  const toolCalls = readToolCalls(message);
  const usage = readUsage(record.usage);
  return {
    text: readText(message.content),
    toolCalls,
    finishReason: readFinishReason(choice?.finish_reason, toolCalls.length > 0),
    ...(usage ? { usage } : {}),
    ...(typeof record.model === 'string' ? { model: record.model } : {}),
  };
}

/**
 * A ChatModel for any OpenAI-compatible `/chat/completions` endpoint: OpenAI, Ollama, vLLM,
 * llama.cpp server, LM Studio. Streams the answer when the engine listens (see `stream`); tolerant of their differences in tool calls,
 * finish reasons and usage.
 */
export function openAICompatible(options: OpenAICompatibleOptions): ChatModel {
  if (!options.baseURL) throw new TypeError('openAICompatible needs { baseURL }');
  if (!options.model) throw new TypeError('openAICompatible needs { model }');
  const url = `${options.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const fetchImplementation = options.fetch ?? globalThis.fetch;
  return {
    name: options.name ?? `openai-compatible:${options.model}`,
    endpoint: displayUrl(url),
    async generate(request) {
      const stream = options.stream !== false && request.onDelta !== undefined;
      const body: Record<string, unknown> = {
        model: options.model,
        messages: request.messages.map(toWireMessage),
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
        ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
        ...(options.maxOutputTokens === undefined ? {} : { max_tokens: options.maxOutputTokens }),
        // Empty tool arrays are rejected by some servers: send tools only when there are any.
        ...(request.tools.length > 0
          ? {
              tools: request.tools.map((tool) => ({
                type: 'function',
                function: { name: tool.name, description: tool.description, parameters: tool.parameters },
              })),
              tool_choice: request.toolChoice,
            }
          : {}),
        ...options.body,
      };
      let response: Response;
      let text: string;
      try {
        response = await fetchImplementation(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: stream ? 'text/event-stream, application/json' : 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
            ...options.headers,
          },
          body: JSON.stringify(body),
          signal: request.signal,
        });
      } catch (error) {
        throw connectionError(url, error);
      }
      const source: ChatCompletionSource = {
        url,
        status: response.status,
        contentType: response.headers.get('content-type'),
        ...(options.apiKey ? { secrets: [options.apiKey] } : {}),
      };
      const streamed = response.ok && response.body !== null && /^text\/event-stream/i.test(source.contentType ?? '');
      try {
        text = streamed
          ? await readCompletionStream(response.body as ReadableStream<Uint8Array>, request.onDelta)
          : await response.text();
      } catch (error) {
        if (error instanceof StreamChunkError) throw invalidResponse(error.message, error.chunk, source);
        throw connectionError(url, error);
      }
      if (!response.ok) throw httpError(url, options.model, response, text);
      return parseChatCompletion(text, source);
    },
  };
}
