import type { FunctionDefinition, TokenUsage } from '@stepwise/core';

/** A tool call the model asked for. */
export interface ChatToolCall {
  /** The model's id for the call; tool messages answer it. Adapters invent one when the model gives none. */
  readonly id: string;
  readonly name: string;
  /** Parsed arguments (`{}` when the arguments could not be parsed; see `parseError`). */
  readonly arguments: Record<string, unknown>;
  /** The arguments exactly as the model sent them, when they were text: echoed back verbatim. */
  readonly rawArguments?: string;
  /** Set when the arguments were not a JSON object: the engine tells the model instead of calling the tool. */
  readonly parseError?: string;
}

export type ChatMessage =
  | { readonly role: 'system'; readonly content: string }
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string; readonly toolCalls?: readonly ChatToolCall[] }
  | { readonly role: 'tool'; readonly toolCallId: string; readonly name: string; readonly content: string };

/** `none` asks the model to answer in text (the engine uses it to demand an analysis). */
export type ToolChoice = 'auto' | 'none';

export interface ChatRequest {
  readonly messages: readonly ChatMessage[];
  /** Tools as JSON Schema function definitions. */
  readonly tools: readonly FunctionDefinition[];
  readonly toolChoice: ToolChoice;
  /** Aborted on cancel and on the engine's per-call timeout: adapters must honour it. */
  readonly signal: AbortSignal;
  /**
   * Set when someone watches the run live: an adapter that can stream tells it each piece of the
   * answer's text as it arrives (the whole answer is still returned, and journaled, at the end).
   * Optional for adapters: one that does not stream ignores it.
   */
  readonly onDelta?: (text: string) => void;
}

export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error' | 'other';

export interface ChatResponse {
  /** Text the model wrote ('' when it only called tools). */
  readonly text: string;
  readonly toolCalls: readonly ChatToolCall[];
  readonly finishReason: FinishReason;
  /** Tokens as the endpoint reported them; absent when it reported none (the engine then estimates). */
  readonly usage?: TokenUsage;
  /** The model that answered, when the endpoint says (e.g. a dated snapshot). */
  readonly model?: string;
}

/**
 * The model boundary: messages and tools in, text and/or tool calls out. Implementations throw a
 * `ModelError` (code E407) on failure, `retryable` for transient problems (network, 429, 5xx, timeouts).
 */
export interface ChatModel {
  /** Journaled with every model call, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  /**
   * The URL the model is called at, without credentials or query (traces show its host and
   * port as `server.address`); journaled with every model call. Absent for in-process models.
   */
  readonly endpoint?: string;
  generate(request: ChatRequest): Promise<ChatResponse>;
}
