import { createServer, type IncomingMessage, type Server, type ServerResponse, request as send } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { MemoryStore } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDashboard,
  type Dashboard,
  honoHandler,
  mountDashboard,
  nodeHandler,
  serveDashboard,
} from '../src/index.js';
import { testTools } from './dashboard-harness.js';

const store = new MemoryStore();
let runId = '';
beforeAll(async () => {
  const engine = dagEngine({ tools: testTools(new Set()), store });
  runId = (
    await engine.run({ id: 'adapters', goal: 'Serve me', steps: [{ id: 'a', tool: 'sleep_ms', args: { ms: 1 } }] })
      .result
  ).runId;
});

const servers: Server[] = [];
afterAll(async () => {
  for (const server of servers) await new Promise((resolve) => server.close(resolve));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Reads a Server-Sent Events response until `until` appears, then hangs up. */
async function readStream(url: string, until: string): Promise<string> {
  const controller = new AbortController();
  const response = await fetch(url, { signal: controller.signal });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  while (!text.includes(until)) text += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  return text;
}

type Middleware = (
  request: IncomingMessage & { originalUrl?: string },
  response: ServerResponse,
  next: () => void,
) => void;

/** The smallest Connect: middlewares by path prefix, the prefix stripped from `url` as Connect and Express do. */
function connectLike(stack: [string, Middleware][]) {
  return (request: IncomingMessage & { originalUrl?: string }, response: ServerResponse) => {
    request.originalUrl ??= request.url;
    const original = request.originalUrl as string;
    let index = 0;
    const next = () => {
      const entry = stack[index++];
      if (!entry) {
        response.writeHead(404).end('nobody');
        return;
      }
      const [prefix, middleware] = entry;
      if (!original.startsWith(prefix)) return next();
      const rest = original.slice(prefix === '/' ? 0 : prefix.length);
      request.url = rest.startsWith('/') ? rest : `/${rest}`;
      middleware(request, response, next);
    };
    next();
  };
}

function hello(request: IncomingMessage, response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/plain' }).end(`host says hello to ${request.url}`);
}

describe('nodeHandler', () => {
  it('serves node:http: the list, a page, and a live stream through to the browser', async () => {
    const dashboard = createDashboard({ store, pollIntervalMs: 20 });
    const url = await listen(createServer(nodeHandler(dashboard)));
    const list = await (await fetch(`${url}/api/runs`)).json();
    expect((list as { runs: { runId: string }[] }).runs.map((run) => run.runId)).toEqual([runId]);
    const page = await fetch(`${url}/runs/${runId}`);
    expect(page.headers.get('set-cookie')).toMatch(
      /^stepwise_dashboard_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    expect(await page.text()).toContain('Serve me');
    const stream = await readStream(`${url}/api/runs/${runId}/events?after=1`, 'event: view');
    expect(stream).toMatch(/^id: 2\nevent: journal\n/m);
    const runs = await readStream(`${url}/api/runs/stream`, 'event: runs');
    expect(runs).toContain(runId);
    await dashboard.close();
  });

  it('stops reading the store once the browser hangs up on a live stream', async () => {
    let reads = 0;
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        if (name === 'read') {
          return (...args: Parameters<MemoryStore['read']>) => {
            reads++;
            return target.read(...args);
          };
        }
        const value = Reflect.get(target, name, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const dashboard = createDashboard({ store: counted, pollIntervalMs: 10 });
    const url = await listen(createServer(nodeHandler(dashboard)));
    await readStream(`${url}/api/runs/${runId}/events?after=1`, 'event: view');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = reads;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // At 10 ms a turn, a stream still going would have read about 30 more times.
    expect(reads - after).toBeLessThanOrEqual(1);
  });

  it('is a Connect/Express middleware: its paths under the mount point, the rest to next', async () => {
    const dashboard = createDashboard({ store, basePath: '/ops/stepwise' });
    const url = await listen(
      createServer(
        connectLike([
          ['/ops/stepwise', nodeHandler(dashboard)],
          ['/', (request, response) => hello(request, response)],
        ]),
      ),
    );
    expect(await (await fetch(`${url}/hello`)).text()).toBe('host says hello to /hello');
    const page = await (await fetch(`${url}/ops/stepwise/runs/${runId}`)).text();
    expect(page).toContain('src="/ops/stepwise/assets/run.js"');
    const script = await fetch(`${url}/ops/stepwise/assets/run.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const redirect = await fetch(`${url}/ops/stepwise`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([308, '/ops/stepwise/']);
    // A path the dashboard does not own goes on to the host, though it starts like the mount point.
    expect(await (await fetch(`${url}/ops/stepwiser`)).text()).toBe('host says hello to /ops/stepwiser');
  });

  it('refuses a body larger than 1 MB with 413 and keeps serving', async () => {
    const url = await listen(createServer(nodeHandler(createDashboard({ store }))));
    const response = await fetch(`${url}/api/runs/${runId}/actions`, {
      method: 'POST',
      body: 'x'.repeat(1024 * 1024 + 1),
    });
    expect(response.status).toBe(413);
    expect((await fetch(`${url}/api/runs`)).status).toBe(200);
  });
});

describe('mountDashboard', () => {
  it("joins an existing server in one line; the host's own routes keep working; unmount restores them", async () => {
    const server = createServer(hello);
    const url = await listen(server);
    const unmount = mountDashboard(server, createDashboard({ store, basePath: '/stepwise' }));
    expect((await fetch(`${url}/stepwise/api/runs`)).status).toBe(200);
    expect(await (await fetch(`${url}/orders`)).text()).toBe('host says hello to /orders');
    unmount();
    expect(await (await fetch(`${url}/stepwise/api/runs`)).text()).toBe('host says hello to /stepwise/api/runs');
  });
});

describe('honoHandler', () => {
  it('answers the request a Hono context wraps, full path and all', async () => {
    const dashboard: Dashboard = createDashboard({ store, basePath: '/stepwise' });
    const handler = honoHandler(dashboard);
    const response = await handler({ req: { raw: new Request(`http://127.0.0.1/stepwise/api/runs/${runId}`) } });
    expect((await response.json()) as { runId: string }).toMatchObject({ runId });
  });
});

describe('serveDashboard', () => {
  it('binds to 127.0.0.1 and answers only to loopback host names (no DNS rebinding)', async () => {
    const served = await serveDashboard({ store });
    try {
      expect(served.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect((await fetch(`${served.url}api/runs`)).status).toBe(200);
      const port = new URL(served.url).port;
      // A page of attacker.example whose DNS name now points at 127.0.0.1 sends its own Host.
      const rebound = await new Promise<number>((resolve, reject) => {
        send(
          { host: '127.0.0.1', port, path: '/api/runs', headers: { host: `attacker.example:${port}` } },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        )
          .on('error', reject)
          .end();
      });
      expect(rebound).toBe(421);
    } finally {
      await served.close();
    }
  });

  it('refuses a port in use with E601 naming the port', async () => {
    const served = await serveDashboard({ store });
    try {
      const port = Number(new URL(served.url).port);
      const taken = await serveDashboard({ store, port }).catch((error: unknown) => error);
      expect(StepwiseError.isInstance(taken) && [taken.code, taken.location]).toEqual([
        ErrorCodes.CONFIG_INVALID,
        '/port',
      ]);
      expect((taken as Error).message).toContain('EADDRINUSE');
    } finally {
      await served.close();
    }
  });
});
