/** More tool calls than this in one answer is not a model's answer. */
const MAX_TOOL_CALLS = 256;

/** One tool call as its pieces arrive (`index` says which call a piece belongs to). */
interface CallPieces {
  id?: string;
  name?: string;
  arguments: string;
}

/** What the chunks of a streamed completion add up to. */
interface Assembled {
  content: string;
  calls: CallPieces[];
  finishReason: unknown;
  usage: unknown;
  model: unknown;
  /** Whether any chunk had a choice: a stream with none is not a completion. */
  choices: boolean;
}

/** A chunk that is not JSON, or an `error` sent mid-stream: the caller quotes it as an invalid response. */
export class StreamChunkError extends Error {
  readonly chunk: string;
  constructor(problem: string, chunk: string) {
    super(problem);
    this.chunk = chunk;
  }
}

function addChunk(into: Assembled, data: string): void {
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    throw new StreamChunkError('with a stream chunk that is not JSON', data);
  }
  if (typeof chunk !== 'object' || chunk === null)
    throw new StreamChunkError('with a stream chunk that is not an object', data);
  const record = chunk as { choices?: unknown; usage?: unknown; model?: unknown; error?: unknown };
  if (record.error !== undefined) throw new StreamChunkError('with an error in place of a completion', data);
  if (record.usage) into.usage = record.usage;
  if (typeof record.model === 'string') into.model = record.model;
  const choice = Array.isArray(record.choices) ? (record.choices[0] as Record<string, unknown> | undefined) : undefined;
  if (!choice) return;
  into.choices = true;
  if (choice.finish_reason) into.finishReason = choice.finish_reason;
  const delta = (choice.delta ?? {}) as { content?: unknown; tool_calls?: unknown };
  if (typeof delta.content === 'string') into.content += delta.content;
  if (!Array.isArray(delta.tool_calls)) return;
  for (const [position, piece] of (delta.tool_calls as Record<string, unknown>[]).entries()) {
    const index = piece.index === undefined ? position : piece.index;
    // An index is a position in a short list: anything else would make a huge sparse array.
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= MAX_TOOL_CALLS) {
      throw new StreamChunkError('with a tool call index that is not a small whole number', data);
    }
    let call = into.calls[index];
    if (!call) {
      call = { arguments: '' };
      into.calls[index] = call;
    }
    const fn = (piece.function ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof piece.id === 'string' && piece.id) call.id = piece.id;
    if (typeof fn.name === 'string' && fn.name) call.name = (call.name ?? '') + fn.name;
    if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
  }
}

/**
 * Reads a streamed chat completion (`stream: true`: Server-Sent Events of `chat.completion.chunk`s
 * ending with `data: [DONE]`), telling `onDelta` each piece of text as it arrives, and returns the
 * body a non-streamed completion would have had — so one parser reads both. Tool calls come in
 * pieces keyed by `index` (a name once, arguments in fragments); usage comes in the last chunk
 * when the server sends it. Throws `StreamChunkError` for a chunk that is not a completion chunk.
 */
export async function readCompletionStream(
  body: ReadableStream<Uint8Array>,
  onDelta: ((text: string) => void) | undefined,
): Promise<string> {
  const into: Assembled = {
    content: '',
    calls: [],
    finishReason: null,
    usage: undefined,
    model: undefined,
    choices: false,
  };
  const decoder = new TextDecoder();
  let buffered = '';
  const reader = body.getReader();
  let done = false;
  while (!done) {
    const read = await reader.read();
    buffered += read.done ? decoder.decode() : decoder.decode(read.value, { stream: true });
    done = read.done;
    // Events end with a blank line; a server may use \r\n.
    const events = buffered.split(/\r?\n\r?\n/);
    buffered = done ? '' : (events.pop() ?? '');
    for (const event of events) {
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data === '' || data === '[DONE]') continue;
      const before = into.content.length;
      addChunk(into, data);
      if (onDelta && into.content.length > before) onDelta(into.content.slice(before));
    }
  }
  const toolCalls = into.calls
    .filter((call) => call !== undefined)
    .map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  const message = {
    role: 'assistant',
    content: into.content,
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
  };
  return JSON.stringify({
    choices: into.choices ? [{ message, finish_reason: into.finishReason }] : [],
    ...(into.usage ? { usage: into.usage } : {}),
    ...(into.model === undefined ? {} : { model: into.model }),
  });
}
