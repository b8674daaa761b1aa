import { lookup as dnsLookup } from 'node:dns';
import { mkdtemp, rm } from 'node:fs/promises';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { messageOf } from '@stepwise/core/engine';
import { addressPermitted, type HostPattern, matchHost, normalizeHost } from './host-allow-list.js';

/** A connection to an allowed host that does not open within this time fails (502). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The host side of a sandboxed server's network: an HTTP proxy (CONNECT tunnels and plain
 * `http://` requests in absolute form) listening on a unix socket that is bound into the
 * sandbox. It is the only way out of the sandbox's empty network namespace, and it opens a
 * connection only to a host and port `allowHosts` lists, at an address the list permits.
 */
export interface EgressProxy {
  /** The unix socket the proxy listens on, in a directory only this user can enter. */
  readonly socketPath: string;
  /** Stops listening, cuts every open tunnel and request, removes the socket. Idempotent. */
  close(): Promise<void>;
}

export interface EgressProxyOptions {
  readonly allow: readonly HostPattern[];
  /** Told about each refused target (`host:port`) and why. */
  readonly onRefused?: (target: string, reason: string) => void;
  /** Resolves names. Default `dns.lookup` (what every other program on the host uses). */
  readonly lookup?: typeof dnsLookup;
}

/** A target the proxy will not connect to: answered 403 (by the list) or 502 (it could not). */
class Refusal extends Error {
  constructor(
    readonly status: 403 | 502,
    message: string,
  ) {
    super(message);
  }
}

function resolveAll(lookup: typeof dnsLookup, host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    lookup(host, { all: true }, (error, addresses) => {
      if (error) reject(new Refusal(502, `${host} does not resolve: ${error.code ?? error.message}`));
      else resolve(addresses.map((entry) => entry.address));
    });
  });
}

function connectTo(address: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port });
    const timer = setTimeout(
      () => socket.destroy(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/**
 * A socket to `host:port`, or a Refusal. The name is resolved here and the connection made to
 * the address that was checked, so what is checked is what is used (no second lookup a
 * rebinding DNS server could answer differently).
 */
async function openConnection(options: EgressProxyOptions, host: string, port: number): Promise<Socket> {
  const pattern = matchHost(options.allow, host, port);
  if (!pattern) throw new Refusal(403, `${host}:${port} is not in allowHosts`);
  const resolved = isIP(host) ? [host] : await resolveAll(options.lookup ?? dnsLookup, host);
  const permitted = resolved.filter((address) => addressPermitted(pattern, address));
  if (permitted.length === 0) {
    throw new Refusal(
      403,
      `${host} resolves to ${resolved.join(', ')}, which "${pattern.entry}" does not cover (a name other than localhost may only reach public addresses)`,
    );
  }
  let failure: unknown;
  for (const address of permitted) {
    try {
      return await connectTo(address, port);
    } catch (error) {
      failure = error;
    }
  }
  throw new Refusal(502, `${host}:${port}: ${messageOf(failure)}`);
}

/** `host:port` of a CONNECT request (`[v6]:port` for IPv6). */
function authority(target: string | undefined): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(target ?? '');
  if (!match) return undefined;
  return { host: normalizeHost(match[1] as string), port: Number(match[2]) };
}

function statusText(status: number): string {
  return status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway';
}

/** What the request handlers share: the options, the open sockets, and how to report a refusal. */
interface ProxyContext {
  readonly options: EgressProxyOptions;
  track(socket: Socket): Socket;
  refuse(target: string, error: unknown): Refusal;
}

/** A CONNECT request: a tunnel to the host when the list allows it, else a 403 or 502 answer. */
function tunnel(context: ProxyContext, request: IncomingMessage, client: Socket, head: Buffer): void {
  context.track(client);
  client.on('error', () => client.destroy());
  const target = authority(request.url);
  const opened = target
    ? openConnection(context.options, target.host, target.port)
    : Promise.reject(new Refusal(403, `CONNECT ${request.url} is not host:port`));
  opened.then(
    (upstream) => {
      context.track(upstream);
      upstream.on('error', () => client.destroy());
      upstream.on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    },
    (error: unknown) => {
      const refusal = context.refuse(String(request.url), error);
      client.end(
        `HTTP/1.1 ${refusal.status} ${statusText(refusal.status)}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${refusal.message}\n`,
      );
    },
  );
}

/** A plain HTTP request in absolute form (`GET http://host/path`), sent on to the host. */
function forward(context: ProxyContext, request: IncomingMessage, response: ServerResponse): void {
  const fail = (status: number, message: string) => {
    if (response.headersSent) response.destroy();
    else response.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end(`${message}\n`);
  };
  let url: URL;
  try {
    url = new URL(request.url ?? '');
  } catch {
    fail(400, `${request.url} is not an absolute http:// URL (use CONNECT for https)`);
    return;
  }
  if (url.protocol !== 'http:') {
    fail(400, `${url.protocol} requests go through CONNECT`);
    return;
  }
  const host = normalizeHost(url.hostname);
  const port = url.port === '' ? 80 : Number(url.port);
  openConnection(context.options, host, port).then(
    (socket) => {
      context.track(socket);
      // One request per upstream connection, each checked on its own; the Host header names the
      // host that was checked, so a shared server (a CDN) is not asked for another site.
      const headers: IncomingHttpHeaders = { ...request.headers, host: url.host, connection: 'close' };
      delete headers['proxy-connection'];
      delete headers['proxy-authorization'];
      const upstream = httpRequest(
        { method: request.method, path: `${url.pathname}${url.search}`, headers, createConnection: () => socket },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      upstream.on('error', (error) => fail(502, `${host}:${port}: ${error.message}`));
      request.pipe(upstream);
    },
    (error: unknown) => {
      const refusal = context.refuse(`${host}:${port}`, error);
      fail(refusal.status, refusal.message);
    },
  );
}

/** Starts the proxy on a fresh unix socket. */
export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const directory = await mkdtemp(path.join(tmpdir(), 'stepwise-egress-'));
  const socketPath = path.join(directory, 'proxy.sock');
  const sockets = new Set<Socket>();
  const context: ProxyContext = {
    options,
    track(socket) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      return socket;
    },
    refuse(target, error) {
      const refusal = error instanceof Refusal ? error : new Refusal(502, messageOf(error));
      options.onRefused?.(target, refusal.message);
      return refusal;
    },
  };
  const server = createServer((request, response) => forward(context, request, response));
  server.on('connection', (socket: Socket) => context.track(socket));
  server.on('clientError', (_error, socket) => socket.destroy());
  server.on('connect', (request: IncomingMessage, client: Socket, head: Buffer) =>
    tunnel(context, request, client, head),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    socketPath,
    close() {
      closing ??= (async () => {
        const closed = new Promise((resolve) => server.close(resolve));
        for (const socket of sockets) socket.destroy();
        await closed;
        await rm(directory, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
