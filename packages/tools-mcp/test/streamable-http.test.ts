import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpTools } from '../src/index.js';
import { runWithKernel } from './helpers.js';

const TOOLS = [
  {
    name: 'shout',
    description: 'Upper-cases a word.',
    inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'whoami',
    description: 'Reports the Authorization header.',
    inputSchema: { type: 'object' },
    annotations: { readOnlyHint: true },
  },
];

function fixtureServer(request: IncomingMessage): McpServer {
  const mcp = new McpServer({ name: 'http-fixture', version: '2.0.0' }, { capabilities: { tools: {} } });
  mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  mcp.setRequestHandler(CallToolRequestSchema, async ({ params }) => ({
    content: [
      {
        type: 'text',
        text:
          params.name === 'shout'
            ? String(params.arguments?.word).toUpperCase()
            : String(request.headers.authorization),
      },
    ],
  }));
  return mcp;
}

interface RunningServer {
  readonly server: Server;
  readonly url: string;
  /** Every request: method, headers. */
  readonly requests: { method: string | undefined; headers: IncomingHttpHeaders }[];
  /** Stateful: drops every session, as a restarted server would. */
  forgetSessions(): void;
}

/**
 * A Streamable HTTP server on 127.0.0.1. Stateless: a fresh McpServer per request. Stateful: one
 * per session (`Mcp-Session-Id`), and 404 for a session it does not know, as the spec asks.
 */
async function startServer(options: { port?: number; stateful?: boolean } = {}): Promise<RunningServer> {
  const requests: RunningServer['requests'] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const server = createServer(async (request, response) => {
    requests.push({ method: request.method, headers: request.headers });
    if (!options.stateful) {
      const mcp = fixtureServer(request);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(request, response);
      return;
    }
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const known = sessions.get(sessionId);
      if (!known) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }),
        );
        return;
      }
      await known.handleRequest(request, response);
      return;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
      },
    });
    await fixtureServer(request).connect(transport);
    await transport.handleRequest(request, response);
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${address.port}/mcp`, requests, forgetSessions: () => sessions.clear() };
}

function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => (server.listening ? stop(server) : undefined)));
});

describe('Streamable HTTP', () => {
  it('lists and calls tools, sending the configured headers', async () => {
    const { server, url, requests } = await startServer();
    servers.push(server);
    const plugin = await mcpTools({ url, headers: { Authorization: 'Bearer test-token-123' } });
    try {
      expect(plugin.name).toBe('http-fixture');
      expect(plugin.pid).toBeUndefined();
      const registry = new ToolRegistry();
      await registry.use(plugin, { prefix: 'web_' });
      expect(registry.get('web_shout')?.effect).toBe('read');
      const result = await runWithKernel(
        makePlan([
          { id: 'shout', tool: 'web_shout', args: { word: 'quiet' } },
          { id: 'who', tool: 'web_whoami', args: {} },
        ]),
        registry,
      );
      expect(result.steps.map((step) => step.status)).toEqual(['succeeded', 'succeeded']);
      expect(result.steps[0]?.output).toMatchObject({ text: 'QUIET' });
      expect(requests.every(({ headers }) => headers.authorization === 'Bearer test-token-123')).toBe(true);
    } finally {
      await plugin.dispose();
    }
  });

  it('fails retryable while the server is down and reconnects (new session) when it is back', async () => {
    const first = await startServer({ stateful: true });
    servers.push(first.server);
    const plugin = await mcpTools({ url: first.url });
    try {
      const registry = new ToolRegistry();
      await registry.use(plugin);
      const port = Number(new URL(first.url).port);
      await stop(first.server);

      const down = await runWithKernel(makePlan([{ id: 'shout', tool: 'shout', args: { word: 'x' } }]), registry);
      expect(down.steps[0]?.error).toMatchObject({ code: 'E300', retryable: true });
      expect(down.steps[0]?.error?.message).toContain('transport failure');

      const second = await startServer({ port, stateful: true });
      servers.push(second.server);
      const back = await runWithKernel(makePlan([{ id: 'shout', tool: 'shout', args: { word: 'back' } }]), registry);
      expect(back.steps[0]).toMatchObject({ status: 'succeeded', output: { text: 'BACK' } });
    } finally {
      await plugin.dispose();
    }
  });

  it('fails retryable when the server forgot the session (404), then starts a new session', async () => {
    const running = await startServer({ stateful: true });
    servers.push(running.server);
    const plugin = await mcpTools({ url: running.url });
    try {
      const registry = new ToolRegistry();
      await registry.use(plugin);
      const oldSession = running.requests.at(-1)?.headers['mcp-session-id'];
      running.forgetSessions();

      const stale = await runWithKernel(makePlan([{ id: 'shout', tool: 'shout', args: { word: 'x' } }]), registry);
      expect(stale.steps[0]?.error).toMatchObject({ code: 'E300', retryable: true });
      expect(stale.steps[0]?.error?.message).toContain('(HTTP 404)');

      const fresh = await runWithKernel(makePlan([{ id: 'shout', tool: 'shout', args: { word: 'new' } }]), registry);
      expect(fresh.steps[0]).toMatchObject({ status: 'succeeded', output: { text: 'NEW' } });
      const newSession = running.requests.at(-1)?.headers['mcp-session-id'];
      expect(newSession).toBeTruthy();
      expect(newSession).not.toBe(oldSession);
    } finally {
      await plugin.dispose();
    }
  });

  it('ends its session on dispose', async () => {
    const { server, url, requests } = await startServer({ stateful: true });
    servers.push(server);
    const plugin = await mcpTools({ url });
    const session = requests.find(({ headers }) => headers['mcp-session-id'])?.headers['mcp-session-id'];
    expect(session).toBeTruthy();
    await plugin.dispose();
    expect(requests.at(-1)).toMatchObject({ method: 'DELETE', headers: { 'mcp-session-id': session } });
  });

  it('reports an unreachable server as a plugin error (E602)', async () => {
    const { server, url } = await startServer();
    await stop(server);
    await expect(mcpTools({ url, connectTimeoutMs: 5_000 })).rejects.toMatchObject({
      code: 'E602',
      location: url,
    });
  });
});
