import type { ServerResponse } from 'node:http';
import { openAIResponseBody } from './fake-openai-server.js';
import type { ScriptedTurn } from './scripted-model.js';

/**
 * Sends a scripted turn as a streamed completion (`stream: true`), as OpenAI does: a first chunk
 * with the role, the text a word at a time, each tool call in pieces (its name, then its arguments
 * in two halves), a chunk with the finish reason, a usage chunk when asked
 * (`stream_options.include_usage`), then `data: [DONE]`. `pause` is awaited after each text chunk.
 */
export async function sendStreamedTurn(
  response: ServerResponse,
  turn: ScriptedTurn,
  options: {
    readonly index: number;
    readonly model: string;
    readonly includeUsage: boolean;
    readonly pause?: (chunk: number) => unknown;
  },
): Promise<void> {
  const whole = openAIResponseBody(turn, options.index, options.model) as {
    choices: {
      message: { content: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[] };
      finish_reason: string;
    }[];
    usage?: unknown;
  };
  const choice = whole.choices[0] as (typeof whole.choices)[number];
  const base = { id: `chatcmpl-${options.index}`, object: 'chat.completion.chunk', model: options.model };
  const send = (payload: Record<string, unknown>) =>
    response.write(`data: ${JSON.stringify({ ...base, ...payload })}\n\n`);
  const delta = (value: Record<string, unknown>, finish: string | null = null) =>
    send({ choices: [{ index: 0, delta: value, finish_reason: finish }] });
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  delta({ role: 'assistant', content: '' });
  const words = (choice.message.content ?? '').split(/(?<=\s)/).filter((word) => word !== '');
  for (const [chunk, word] of words.entries()) {
    if (response.destroyed) return;
    delta({ content: word });
    await options.pause?.(chunk);
  }
  for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
    const half = Math.ceil(call.function.arguments.length / 2);
    delta({
      tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
    });
    delta({ tool_calls: [{ index, function: { arguments: call.function.arguments.slice(0, half) } }] });
    delta({ tool_calls: [{ index, function: { arguments: call.function.arguments.slice(half) } }] });
  }
  delta({}, choice.finish_reason);
  if (options.includeUsage && whole.usage) send({ choices: [], usage: whole.usage });
  response.end('data: [DONE]\n\n');
}
