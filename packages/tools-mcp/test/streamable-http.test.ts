import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
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

/** A stateless Streamable HTTP server on 127.0.0.1: a fresh McpServer per request. */
async function startServer(port = 0): Promise<{ server: Server; url: string; headers: IncomingHttpHeaders[] }> {
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer(async (request, response) => {
    headers.push(request.headers);
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
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(request, response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${address.port}/mcp`, headers };
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
    const { server, url, headers } = await startServer();
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
      expect(headers.every((header) => header.authorization === 'Bearer test-token-123')).toBe(true);
    } finally {
      await plugin.dispose();
    }
  });

  it('fails retryable while the server is down and reconnects when it is back', async () => {
    const first = await startServer();
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

      const second = await startServer(port);
      servers.push(second.server);
      const back = await runWithKernel(makePlan([{ id: 'shout', tool: 'shout', args: { word: 'back' } }]), registry);
      expect(back.steps[0]).toMatchObject({ status: 'succeeded', output: { text: 'BACK' } });
    } finally {
      await plugin.dispose();
    }
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
