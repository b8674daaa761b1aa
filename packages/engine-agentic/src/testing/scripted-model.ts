import type { TokenUsage } from '@stepwise/core';
import type { ChatModel, ChatRequest, ChatResponse, ChatToolCall, FinishReason } from '../chat-model.js';
import { ModelError } from '../model-error.js';
import { parseToolArguments } from '../openai-compatible.js';

export interface ScriptedToolCall {
  readonly name: string;
  /** An object, or raw text (sent as-is: invalid JSON tests the engine's correction turn). Default `{}`. */
  readonly arguments?: Record<string, unknown> | string;
  /** Default `call_<call>_<index>`. */
  readonly id?: string;
}

/** One model answer. With `error`, the call throws it instead of answering. */
export interface ScriptedTurn {
  readonly text?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Reported usage; omit it to let the engine estimate, as it does for endpoints that report none. */
  readonly usage?: TokenUsage;
  readonly finishReason?: FinishReason;
  readonly error?: unknown;
  /** Waits this long (honouring the abort signal) before answering. */
  readonly delayMs?: number;
}

/** What a script function sees: the request and how many calls came before it. */
export interface ScriptContext {
  readonly request: ChatRequest;
  /** 0 for the model's first call, across steps and retries. */
  readonly call: number;
}

export type Script = readonly ScriptedTurn[] | ((context: ScriptContext) => ScriptedTurn | Promise<ScriptedTurn>);

export interface ScriptedModel extends ChatModel {
  /** Every request received, in order (tests assert on prompts and windows). */
  readonly requests: ChatRequest[];
  /** Calls so far (failed ones included). */
  readonly calls: number;
}

export interface ScriptedModelOptions {
  /** Default `scripted`. */
  readonly name?: string;
}

/** Builds a ChatResponse from a scripted turn, as an adapter would. */
export function scriptedResponse(turn: ScriptedTurn, call: number): ChatResponse {
  const toolCalls: ChatToolCall[] = (turn.toolCalls ?? []).map((scripted, index) => ({
    id: scripted.id ?? `call_${call}_${index}`,
    name: scripted.name,
    ...(typeof scripted.arguments === 'string'
      ? parseToolArguments(scripted.arguments)
      : { arguments: scripted.arguments ?? {} }),
  }));
  return {
    text: turn.text ?? '',
    toolCalls,
    finishReason: turn.finishReason ?? (toolCalls.length > 0 ? 'tool-calls' : 'stop'),
    ...(turn.usage ? { usage: turn.usage } : {}),
  };
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A ChatModel that answers from a script: a list of turns (one per call, across steps), or a
 * function of the request. For tests, examples and benchmarks: no network, fully deterministic.
 */
export function scriptedModel(script: Script, options: ScriptedModelOptions = {}): ScriptedModel {
  const requests: ChatRequest[] = [];
  let calls = 0;
  return {
    name: options.name ?? 'scripted',
    requests,
    get calls() {
      return calls;
    },
    async generate(request) {
      const call = calls++;
      requests.push(request);
      let turn: ScriptedTurn | undefined;
      if (typeof script === 'function') turn = await script({ request, call });
      else turn = script[call];
      if (!turn) {
        throw new ModelError(
          `the scripted model has no answer for call ${call + 1} (script has ${(script as readonly ScriptedTurn[]).length})`,
        );
      }
      if (turn.delayMs) await wait(turn.delayMs, request.signal);
      if (turn.error !== undefined) throw turn.error;
      return scriptedResponse(turn, call);
    },
  };
}

/** A turn that calls one tool. */
export function toolCall(
  name: string,
  args: Record<string, unknown> | string = {},
  extra: Omit<ScriptedTurn, 'toolCalls'> = {},
): ScriptedTurn {
  return { ...extra, toolCalls: [{ name, arguments: args }] };
}

/** A turn that calls `complete_step`. */
export function complete(summary: string, extra: { goals?: unknown; result?: unknown } = {}): ScriptedTurn {
  return { toolCalls: [{ name: 'complete_step', arguments: { summary, ...extra } }] };
}

/** A turn that calls `report_blocked`. */
export function blocked(reason: string): ScriptedTurn {
  return { toolCalls: [{ name: 'report_blocked', arguments: { reason } }] };
}

/** A turn of analysis: text, no tool. */
export function analysis(text: string): ScriptedTurn {
  return { text };
}

/** The tool messages answering the latest assistant message of a request (what the model just learned). */
export function latestToolResults(request: ChatRequest): { name: string; content: string }[] {
  const results: { name: string; content: string }[] = [];
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index];
    if (!message || message.role === 'assistant') break;
    if (message.role === 'tool') results.unshift({ name: message.name, content: message.content });
  }
  return results;
}
