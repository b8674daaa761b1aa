/** One Server-Sent Event: `event:` name, `data:` JSON, and an `id:` the browser sends back on reconnect. */
export interface StreamMessage {
  readonly event: string;
  readonly data: unknown;
  readonly id?: string | number;
}

/** Comment lines keep proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

/**
 * A `text/event-stream` response fed by `follow`, which is called again every `intervalMs` until
 * the browser goes away (the request's signal, or the body is cancelled) or `stopped` aborts
 * (the dashboard closes). `follow` returns the messages to send this turn.
 */
export function eventStreamResponse(options: {
  readonly follow: () => Promise<readonly StreamMessage[]>;
  readonly intervalMs: number;
  readonly signal: AbortSignal;
  readonly stopped: AbortSignal;
  readonly onError: (error: unknown) => void;
}): Response {
  const encoder = new TextEncoder();
  let closed = false;
  let wake: (() => void) | undefined;
  const stop = () => {
    closed = true;
    wake?.();
  };
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      options.signal.addEventListener('abort', stop, { once: true });
      options.stopped.addEventListener('abort', stop, { once: true });
      // The browser reconnects after this many milliseconds when the connection drops.
      controller.enqueue(encoder.encode(`retry: ${Math.max(1000, options.intervalMs * 2)}\n\n`));
      let quietSince = Date.now();
      while (!closed && !options.signal.aborted && !options.stopped.aborted) {
        try {
          const messages = await options.follow();
          if (closed) break;
          for (const message of messages) controller.enqueue(encoder.encode(format(message)));
          if (messages.length > 0) quietSince = Date.now();
          else if (Date.now() - quietSince >= HEARTBEAT_MS) {
            controller.enqueue(encoder.encode(': still here\n\n'));
            quietSince = Date.now();
          }
        } catch (error) {
          options.onError(error);
          controller.enqueue(
            encoder.encode(format({ event: 'failure', data: { message: 'the store could not be read' } })),
          );
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, options.intervalMs).unref?.();
        });
      }
      options.signal.removeEventListener('abort', stop);
      options.stopped.removeEventListener('abort', stop);
      try {
        controller.close();
      } catch {
        // Already cancelled by the reader.
      }
    },
    cancel: stop,
  });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // Proxies that buffer (nginx) would hold the events back.
      'x-accel-buffering': 'no',
    },
  });
}

/** `data:` lines cannot hold a line break: JSON escapes every one in strings, and has none elsewhere. */
function format(message: StreamMessage): string {
  const id = message.id === undefined ? '' : `id: ${message.id}\n`;
  return `${id}event: ${message.event}\ndata: ${JSON.stringify(message.data)}\n\n`;
}
