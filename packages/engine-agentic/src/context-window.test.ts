import { describe, expect, it } from 'vitest';
import type { ChatMessage } from './chat-model.js';
import { fitContext, messageTokens, truncateText } from './context-window.js';
import { heuristicEstimator, loadTokenEstimator } from './token-estimator.js';

const system: ChatMessage = { role: 'system', content: 'You are careful.' };
const stepMessage: ChatMessage = { role: 'user', content: 'Do the step.' };

function turn(index: number, size: number): ChatMessage[] {
  const id = `call_${index}`;
  return [
    { role: 'assistant', content: '', toolCalls: [{ id, name: 'read', arguments: { index } }] },
    { role: 'tool', toolCallId: id, name: 'read', content: `result ${index} `.repeat(size) },
  ];
}

describe('truncateText', () => {
  it('keeps head and tail around a marker and never exceeds the limit', async () => {
    const text = Array.from({ length: 500 }, (_, index) => `line ${index}`).join('\n');
    for (const estimator of [heuristicEstimator, await loadTokenEstimator()]) {
      const cut = truncateText(text, 100, estimator);
      expect(estimator.count(cut.text)).toBeLessThanOrEqual(100);
      expect(cut.text.startsWith('line 0\nline 1')).toBe(true);
      expect(cut.text.endsWith('line 499')).toBe(true);
      expect(cut.text).toMatch(/\[truncated \d+ tokens\]/);
      expect(cut.omittedTokens).toBeGreaterThan(0);
    }
  });

  it('returns short text unchanged', () => {
    expect(truncateText('short', 100, heuristicEstimator)).toEqual({ text: 'short', omittedTokens: 0 });
  });
});

describe('fitContext', () => {
  it('sends everything when it fits', () => {
    const conversation = [system, stepMessage, ...turn(1, 5), ...turn(2, 5)];
    const fitted = fitContext(conversation, { maxTokens: 10_000, toolTokens: 100, estimator: heuristicEstimator });
    expect(fitted.messages).toEqual(conversation);
    expect(fitted.omitted).toBe(0);
  });

  it('keeps the opening messages and the latest whole turns within the budget', () => {
    const conversation = [system, stepMessage, ...Array.from({ length: 8 }, (_, index) => turn(index, 40)).flat()];
    const maxTokens = 400;
    const fitted = fitContext(conversation, { maxTokens, toolTokens: 50, estimator: heuristicEstimator });
    expect(fitted.tokens).toBeLessThanOrEqual(maxTokens);
    expect(fitted.messages[0]).toBe(system);
    expect(fitted.messages[1]?.content).toMatch(/^Do the step\.\n\n\(\d+ earlier messages/);
    // The last message sent is the newest, and no tool message lost its assistant call.
    expect(fitted.messages.at(-1)).toBe(conversation.at(-1));
    expect(fitted.messages[2]?.role).toBe('assistant');
    expect(fitted.omitted).toBe(conversation.length - fitted.messages.length);
    expect(fitted.omitted).toBeGreaterThan(0);
  });

  it('shrinks the latest turn when it alone is too large, and refuses when the opening does not fit', () => {
    const conversation = [system, stepMessage, ...turn(1, 2_000)];
    const fitted = fitContext(conversation, { maxTokens: 300, toolTokens: 0, estimator: heuristicEstimator });
    expect(fitted.tokens).toBeLessThanOrEqual(300);
    expect(fitted.messages.at(-1)?.content).toMatch(/\[truncated \d+ tokens\]/);
    expect(() => fitContext(conversation, { maxTokens: 10, toolTokens: 0, estimator: heuristicEstimator })).toThrow(
      expect.objectContaining({ code: 'E405' }),
    );
  });

  it('counts tool calls in assistant messages', () => {
    const [assistant] = turn(1, 1);
    expect(messageTokens(assistant as ChatMessage, heuristicEstimator)).toBeGreaterThan(4);
  });
});
