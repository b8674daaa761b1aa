import type { lookup as dnsLookup } from 'node:dns';
import { existsSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type EgressProxy, startEgressProxy } from '../src/egress-proxy.js';
import { type HostPattern, parseHostPattern } from '../src/host-allow-list.js';

/** The host's egress proxy on its own, spoken to over its unix socket as the in-sandbox bridge does. */
let target: Server;
let port = 0;
let proxy: EgressProxy | undefined;

beforeEach(async () => {
  target = createServer((_request, response) => response.end('target'));
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  port = (target.address() as { port: number }).port;
});
afterEach(async () => {
  await proxy?.close();
  target.closeAllConnections();
  await new Promise((resolve) => target.close(resolve));
});

function allow(...entries: string[]): HostPattern[] {
  return entries.map((entry) => parseHostPattern(entry) as HostPattern);
}

/** A DNS answer chosen by the test: every name resolves to `address` (a rebinding DNS server). */
function resolvingTo(address: string): typeof dnsLookup {
  return ((_host: string, _options: unknown, callback: (error: null, addresses: unknown[]) => void) =>
    callback(null, [{ address, family: 4 }])) as unknown as typeof dnsLookup;
}

/** CONNECT through the proxy: the status, and the open tunnel when it is 200. */
function tunnel(socketPath: string, authority: string): Promise<{ status: number; socket: Socket; body: string }> {
  return new Promise((resolve, reject) => {
    const open = request({ socketPath, method: 'CONNECT', path: authority });
    open.on('connect', (response, socket, head) =>
      resolve({ status: response.statusCode ?? 0, socket, body: String(head) }),
    );
    open.on('error', reject);
    open.end();
  });
}

describe('egress proxy', () => {
  it('refuses a listed name that resolves to loopback, and lets localhost reach it', async () => {
    const refused: string[] = [];
    proxy = await startEgressProxy({
      allow: allow(`rebound.example:${port}`, `localhost:${port}`),
      lookup: resolvingTo('127.0.0.1'),
      onRefused: (where, reason) => refused.push(`${where}: ${reason}`),
    });
    const rebound = await tunnel(proxy.socketPath, `rebound.example:${port}`);
    expect(rebound.status).toBe(403);
    rebound.socket.destroy();
    expect(refused).toEqual([expect.stringMatching(/rebound\.example.*resolves to 127\.0\.0\.1/)]);
    const local = await tunnel(proxy.socketPath, `localhost:${port}`);
    expect(local.status).toBe(200);
    local.socket.destroy();
  });

  it('closes its socket and cuts open tunnels on close', async () => {
    proxy = await startEgressProxy({ allow: allow(`localhost:${port}`) });
    const { socketPath } = proxy;
    const open = await tunnel(socketPath, `localhost:${port}`);
    expect(open.status).toBe(200);
    const cut = new Promise((resolve) => open.socket.once('close', resolve));
    await proxy.close();
    await cut;
    expect(existsSync(socketPath)).toBe(false);
    await expect(tunnel(socketPath, `localhost:${port}`)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
