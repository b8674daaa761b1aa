import type { FunctionDefinition } from '@stepwise/core';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import type { ChatMessage } from './chat-model.js';
import type { TokenEstimator } from './token-estimator.js';

/** Role markers and separators every chat template adds around a message. */
const MESSAGE_OVERHEAD = 4;

const cachedCounts = new WeakMap<TokenEstimator, WeakMap<ChatMessage, number>>();

/** Estimated tokens of one message (content, tool calls and template overhead); cached per message. */
export function messageTokens(message: ChatMessage, estimator: TokenEstimator): number {
  let cache = cachedCounts.get(estimator);
  if (!cache) {
    cache = new WeakMap();
    cachedCounts.set(estimator, cache);
  }
  const known = cache.get(message);
  if (known !== undefined) return known;
  let count = MESSAGE_OVERHEAD + estimator.count(message.content);
  if (message.role === 'assistant' && message.toolCalls?.length) {
    for (const call of message.toolCalls) {
      count +=
        MESSAGE_OVERHEAD +
        estimator.count(call.name) +
        estimator.count(call.rawArguments ?? JSON.stringify(call.arguments));
    }
  }
  cache.set(message, count);
  return count;
}

/** Estimated tokens of tool definitions as they are sent (JSON). */
export function toolDefinitionTokens(tools: readonly FunctionDefinition[], estimator: TokenEstimator): number {
  return tools.length === 0 ? 0 : estimator.count(JSON.stringify(tools));
}

/** Estimated prompt tokens of a request: what the context budget bounds. */
export function promptTokens(
  messages: readonly ChatMessage[],
  tools: readonly FunctionDefinition[],
  estimator: TokenEstimator,
): number {
  let total = toolDefinitionTokens(tools, estimator);
  for (const message of messages) total += messageTokens(message, estimator);
  return total;
}

/**
 * Keeps the first `maxTokens` of `text` as head (60%) and tail (40%) around a
 * `[truncated N tokens]` marker. Returns the text unchanged when it fits.
 */
export function truncateText(
  text: string,
  maxTokens: number,
  estimator: TokenEstimator,
): { readonly text: string; readonly omittedTokens: number } {
  const total = estimator.count(text);
  if (total <= maxTokens) return { text, omittedTokens: 0 };
  let budget = maxTokens - estimator.count(`\n[truncated ${total} tokens]\n`) - 2;
  for (let tries = 0; tries < 4; tries++) {
    if (budget <= 0) {
      const marker = `[truncated ${total} tokens]`;
      return { text: estimator.count(marker) <= maxTokens ? marker : '', omittedTokens: total };
    }
    const headTokens = Math.ceil(budget * 0.6);
    const tailTokens = budget - headTokens;
    const { head, tail } = estimator.ends(text, headTokens, tailTokens);
    const omitted = total - headTokens - tailTokens;
    const result = `${head}\n[truncated ${omitted} tokens]\n${tail}`;
    // Tokens can merge differently across the cut: check, and cut deeper when the result overshoots.
    const counted = estimator.count(result);
    if (counted <= maxTokens) return { text: result, omittedTokens: omitted };
    budget -= counted - maxTokens + 2;
  }
  return { text: '', omittedTokens: total };
}

export interface ContextWindowOptions {
  /** The prompt budget: messages plus tool definitions. */
  readonly maxTokens: number;
  /** Tokens the tool definitions take (sent with every request). */
  readonly toolTokens: number;
  readonly estimator: TokenEstimator;
}

export interface FittedContext {
  readonly messages: ChatMessage[];
  /** Estimated prompt tokens, tool definitions included. */
  readonly tokens: number;
  /** Messages of older turns left out. */
  readonly omitted: number;
}

function omissionNote(omitted: number): string {
  return `\n\n(${omitted} earlier messages of this step were left out to fit the context window.)`;
}

function budgetError(message: string): StepwiseError {
  return new StepwiseError(ErrorCodes.TOKEN_BUDGET, message, { retryable: false });
}

function shrinkGroup(group: readonly ChatMessage[], available: number, estimator: TokenEstimator): ChatMessage[] {
  // Tool-call arguments must stay valid JSON, so only contents shrink; they share what is left evenly.
  let fixed = 0;
  for (const message of group) fixed += messageTokens(message, estimator) - estimator.count(message.content);
  const shrinkable = group.filter((message) => message.content.length > 0).length;
  if (shrinkable === 0 || available - fixed < shrinkable * 16) {
    throw budgetError(`the latest turn needs ${fixed} tokens even without its contents; raise limits.maxContextTokens`);
  }
  const share = Math.floor((available - fixed) / shrinkable);
  return group.map((message) =>
    message.content.length === 0
      ? message
      : ({ ...message, content: truncateText(message.content, share, estimator).text } as ChatMessage),
  );
}

/**
 * The sliding window: always the opening messages (system prompt and the step), then as many of
 * the latest turns as fit, newest first. A turn (an assistant message with the tool and user
 * messages answering it) is kept or dropped whole, so no tool message loses its call. When even
 * the latest turn alone does not fit, its contents are truncated. Throws E405 when the opening
 * messages alone exceed the budget.
 */
export function fitContext(conversation: readonly ChatMessage[], options: ContextWindowOptions): FittedContext {
  const { estimator } = options;
  let firstTurn = conversation.findIndex((message) => message.role === 'assistant');
  if (firstTurn === -1) firstTurn = conversation.length;
  const head = conversation.slice(0, firstTurn);
  const groups: ChatMessage[][] = [];
  for (const message of conversation.slice(firstTurn)) {
    if (message.role === 'assistant' || groups.length === 0) groups.push([message]);
    else groups.at(-1)?.push(message);
  }

  const budget = options.maxTokens - options.toolTokens;
  let headTokens = 0;
  for (const message of head) headTokens += messageTokens(message, estimator);
  if (headTokens > budget) {
    throw budgetError(
      `the system prompt and the step need ${headTokens + options.toolTokens} tokens, more than limits.maxContextTokens (${options.maxTokens})`,
    );
  }

  const totalGroupTokens = groups.reduce(
    (sum, group) => sum + group.reduce((inner, message) => inner + messageTokens(message, estimator), 0),
    0,
  );
  if (headTokens + totalGroupTokens <= budget) {
    return { messages: [...conversation], tokens: headTokens + totalGroupTokens + options.toolTokens, omitted: 0 };
  }

  const omittedMessages = conversation.length - head.length;
  const reserve = estimator.count(omissionNote(omittedMessages)) + 1;
  let available = budget - headTokens - reserve;
  const kept: ChatMessage[][] = [];
  for (let index = groups.length - 1; index >= 0; index--) {
    const group = groups[index] as ChatMessage[];
    const tokens = group.reduce((sum, message) => sum + messageTokens(message, estimator), 0);
    if (tokens > available) {
      if (kept.length === 0) {
        const shrunk = shrinkGroup(group, available, estimator);
        kept.unshift(shrunk);
        available -= shrunk.reduce((sum, message) => sum + messageTokens(message, estimator), 0);
      }
      break;
    }
    kept.unshift(group);
    available -= tokens;
  }
  const keptMessages = kept.flat();
  const omitted = conversation.length - head.length - keptMessages.length;
  const lastHead = head.at(-1);
  const notedHead =
    omitted > 0 && lastHead
      ? [...head.slice(0, -1), { ...lastHead, content: `${lastHead.content}${omissionNote(omitted)}` } as ChatMessage]
      : head;
  const messages = [...notedHead, ...keptMessages];
  return { messages, tokens: promptTokens(messages, [], estimator) + options.toolTokens, omitted };
}
