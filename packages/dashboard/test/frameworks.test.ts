import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryStore } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboard, honoHandler, nodeHandler } from '../src/index.js';
import { testTools } from './dashboard-harness.js';

/**
 * Express and Hono are not dependencies of any package here; when another package's dependencies
 * bring them into node_modules, the adapters are also tried against the real frameworks.
 */
async function optional(name: string): Promise<Record<string, unknown> | undefined> {
  try {
    return (await import(/* @vite-ignore */ name)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const express = await optional('express');
const hono = await optional('hono');
const honoServer = await optional('@hono/node-server');

const store = new MemoryStore();
let runId = '';
const servers: Server[] = [];
beforeAll(async () => {
  const engine = dagEngine({ tools: testTools(new Set()), store });
  runId = (
    await engine.run({ id: 'framework', goal: 'Mounted', steps: [{ id: 'a', tool: 'sleep_ms', args: { ms: 1 } }] })
      .result
  ).runId;
});
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

function urlOf(server: Server): string {
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe.skipIf(!express)('nodeHandler in a real Express app', () => {
  it('serves under app.use(basePath, …) beside the app’s own routes', async () => {
    type App = {
      use(path: string, handler: unknown): void;
      get(path: string, handler: (request: unknown, response: { send(body: string): void }) => void): void;
      listen(port: number, host: string, callback: () => void): Server;
    };
    const app = ((express as Record<string, unknown>).default as () => App)();
    app.get('/health', (_request, response) => response.send('ok'));
    app.use('/stepwise', nodeHandler(createDashboard({ store, basePath: '/stepwise' })));
    const server = await new Promise<Server>((resolve) => {
      const started: Server = app.listen(0, '127.0.0.1', () => resolve(started));
    });
    const url = urlOf(server);
    expect(await (await fetch(`${url}/health`)).text()).toBe('ok');
    const page = await (await fetch(`${url}/stepwise/runs/${runId}`)).text();
    expect(page).toContain('src="/stepwise/assets/run.js"');
    expect(page).toContain('Mounted');
  });
});

describe.skipIf(!hono || !honoServer)('honoHandler in a real Hono app', () => {
  it("serves app.all('/stepwise/*') beside the app's own routes", async () => {
    type HonoApp = {
      get(path: string, handler: (context: { text(body: string): Response }) => Response): void;
      all(path: string, handler: unknown): void;
      fetch: (request: Request) => Promise<Response>;
    };
    const app = new ((hono as Record<string, unknown>).Hono as new () => HonoApp)();
    app.get('/health', (context) => context.text('ok'));
    app.all('/stepwise/*', honoHandler(createDashboard({ store, basePath: '/stepwise' })));
    const serve = (honoServer as Record<string, unknown>).serve as (options: object, callback: () => void) => Server;
    const server = await new Promise<Server>((resolve) => {
      const started = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
    });
    const url = urlOf(server);
    expect(await (await fetch(`${url}/health`)).text()).toBe('ok');
    const view = (await (await fetch(`${url}/stepwise/api/runs/${runId}`)).json()) as { runId: string };
    expect(view.runId).toBe(runId);
  });
});
