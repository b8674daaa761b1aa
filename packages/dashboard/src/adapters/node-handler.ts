import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Dashboard } from '../create-dashboard.js';

/**
 * What the adapter reads of a request: node:http's `IncomingMessage`, and Express's or Connect's
 * (`originalUrl` is the path before a router stripped its mount point).
 */
export type NodeRequest = IncomingMessage & { originalUrl?: string };

/** `(request, response, next?)`: a node:http request listener and a Connect/Express middleware at once. */
export type NodeHandler = (request: NodeRequest, response: ServerResponse, next?: (error?: unknown) => void) => void;

/** Bodies larger than this are refused before they are read whole. */
const MAX_BODY_BYTES = 1024 * 1024;

function pathOf(request: NodeRequest): string {
  const raw = request.originalUrl ?? request.url ?? '/';
  try {
    return new URL(raw, 'http://host').pathname;
  } catch {
    return '/';
  }
}

async function readBody(request: NodeRequest): Promise<Buffer | undefined> {
  if (request.method === 'GET' || request.method === 'HEAD') return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw Object.assign(new Error('request body too large'), { status: 413 });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The Fetch API `Request` of a node:http request; aborted when the connection closes. */
async function toRequest(request: NodeRequest, signal: AbortSignal): Promise<Request> {
  const encrypted = (request.socket as { encrypted?: boolean }).encrypted === true;
  const host = request.headers.host ?? 'localhost';
  const url = new URL(request.originalUrl ?? request.url ?? '/', `${encrypted ? 'https' : 'http'}://${host}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const body = await readBody(request);
  return new Request(url, { method: request.method ?? 'GET', headers, signal, ...(body ? { body } : {}) });
}

/** Writes a Fetch API `Response` to node:http, streaming its body (Server-Sent Events) until either side stops. */
async function writeResponse(response: Response, target: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  target.writeHead(response.status, headers);
  if (!response.body) {
    target.end();
    return;
  }
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
  target.on('close', () => body.destroy());
  // Each event is flushed as it comes: node:http does not buffer a chunked response.
  body.pipe(target);
  await new Promise<void>((resolve) => {
    body.on('end', resolve);
    body.on('close', resolve);
    body.on('error', resolve);
  });
}

/**
 * The dashboard as a node:http request listener and a Connect/Express middleware: requests under
 * the dashboard's `basePath` are answered, the others go to `next` (or get a 404 without one).
 * Mount it at the same path as `basePath`: `app.use('/stepwise', nodeHandler(dashboard))`.
 */
export function nodeHandler(dashboard: Dashboard): NodeHandler {
  return (request, response, next) => {
    if (!dashboard.handles(pathOf(request))) {
      if (next) next();
      else response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const connection = new AbortController();
    response.on('close', () => connection.abort());
    toRequest(request, connection.signal)
      .then((fetchRequest) => dashboard.fetch(fetchRequest))
      .then((fetchResponse) => writeResponse(fetchResponse, response))
      .catch((error: { status?: number }) => {
        if (!response.headersSent) response.writeHead(error.status ?? 500, { 'content-type': 'text/plain' });
        response.end(error.status === 413 ? 'request body too large' : 'the dashboard failed to answer');
      });
  };
}

/**
 * Mounts the dashboard into an existing node:http (or https) server in one call: requests under
 * `basePath` go to the dashboard, every other request to the listeners the server already had.
 * Returns a function that restores the server's own listeners.
 */
export function mountDashboard(server: Server, dashboard: Dashboard): () => void {
  const own = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
  const handler = nodeHandler(dashboard);
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    handler(request, response, () => {
      for (const previous of own) previous.call(server, request, response);
      if (own.length === 0) response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    });
  };
  server.removeAllListeners('request');
  server.on('request', listener);
  return () => {
    server.removeListener('request', listener);
    for (const previous of own) server.on('request', previous);
  };
}
