import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendStreamedTurn } from './fake-openai-stream.js';
import type { ScriptedTurn } from './scripted-model.js';

/** A reply sent exactly as given: for error statuses, Retry-After and malformed bodies. */
export interface RawReply {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** A string is sent verbatim (invalid JSON included); an object as JSON. */
  readonly body: string | Readonly<Record<string, unknown>>;
  readonly delayMs?: number;
}

export type FakeReply = ScriptedTurn | RawReply;

export interface FakeRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it did not parse). */
  readonly body: Record<string, unknown> | undefined;
}

export interface FakeOpenAIServerOptions {
  /** One reply per chat-completions request, in order, or a function of the request. */
  readonly replies: readonly FakeReply[] | ((request: FakeRequest, index: number) => FakeReply | Promise<FakeReply>);
  /** Reported in responses. Default `fake-model`. */
  readonly model?: string;
  /**
   * Awaited after each text chunk of a streamed answer (a request with `stream: true`): a test holds
   * the stream here to see what arrived before the answer ended.
   */
  readonly betweenChunks?: (request: FakeRequest, chunk: number) => unknown;
}

export interface FakeOpenAIServer {
  /** Base URL for `openAICompatible({ baseURL })`, e.g. `http://127.0.0.1:53211/v1`. */
  readonly url: string;
  readonly port: number;
  /** Chat-completions requests received, in order. */
  readonly requests: FakeRequest[];
  close(): Promise<void>;
}

function isRaw(reply: FakeReply): reply is RawReply {
  return 'body' in reply;
}

/** A scripted turn as an OpenAI chat-completions response body. */
export function openAIResponseBody(turn: ScriptedTurn, index: number, model: string): Record<string, unknown> {
  const toolCalls = (turn.toolCalls ?? []).map((call, position) => ({
    id: call.id ?? `call_${index}_${position}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }));
  return {
    id: `chatcmpl-${index}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: turn.text ?? (toolCalls.length > 0 ? null : ''),
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: turn.finishReason === 'length' ? 'length' : toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    ...(turn.usage
      ? {
          usage: {
            prompt_tokens: turn.usage.promptTokens,
            completion_tokens: turn.usage.completionTokens,
            total_tokens: turn.usage.totalTokens,
          },
        }
      : {}),
  };
}

function send(response: ServerResponse, status: number, body: string, headers: Readonly<Record<string, string>> = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(body);
}

/** Writes one scripted reply: raw, an error, a streamed turn, or a whole completion. */
async function sendReply(
  response: ServerResponse,
  reply: FakeReply,
  context: {
    readonly body: Record<string, unknown> | undefined;
    readonly index: number;
    readonly model: string;
    readonly received: FakeRequest;
    readonly options: FakeOpenAIServerOptions;
  },
): Promise<void> {
  const { body, index, model, received, options } = context;
  if (isRaw(reply)) {
    send(
      response,
      reply.status ?? 200,
      typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body),
      reply.headers,
    );
    return;
  }
  if (reply.error !== undefined) {
    send(response, 500, JSON.stringify({ error: { message: String((reply.error as Error)?.message ?? reply.error) } }));
    return;
  }
  if (body?.stream === true) {
    const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
    await sendStreamedTurn(response, reply, {
      index,
      model,
      includeUsage: streamOptions?.include_usage === true,
      pause: (chunk) => options.betweenChunks?.(received, chunk),
    });
    return;
  }
  send(response, 200, JSON.stringify(openAIResponseBody(reply, index, model)));
}

/**
 * An OpenAI-compatible endpoint on 127.0.0.1 (random port) that replays scripted replies over
 * real HTTP: `POST …/chat/completions` answers from the script, `GET …/models` lists the model.
 * Requests past the end of a reply list get a 400 that names the problem.
 */
export async function startFakeOpenAIServer(options: FakeOpenAIServerOptions): Promise<FakeOpenAIServer> {
  const model = options.model ?? 'fake-model';
  const requests: FakeRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const path = request.url ?? '/';
      if (request.method === 'GET' && path.endsWith('/models')) {
        send(response, 200, JSON.stringify({ object: 'list', data: [{ id: model, object: 'model' }] }));
        return;
      }
      if (request.method !== 'POST' || !path.endsWith('/chat/completions')) {
        send(response, 404, JSON.stringify({ error: { message: `no route ${request.method} ${path}` } }));
        return;
      }
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const received: FakeRequest = { path, headers: request.headers, body };
      const index = requests.length;
      requests.push(received);
      let reply: FakeReply | undefined;
      try {
        reply = typeof options.replies === 'function' ? await options.replies(received, index) : options.replies[index];
      } catch (error) {
        send(response, 500, JSON.stringify({ error: { message: `script failed: ${(error as Error).message}` } }));
        return;
      }
      if (!reply) {
        send(response, 400, JSON.stringify({ error: { message: `no scripted reply for request ${index + 1}` } }));
        return;
      }
      const delayMs = reply.delayMs ?? 0;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (response.destroyed) return;
      await sendReply(response, reply, { body, index, model, received, options });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
