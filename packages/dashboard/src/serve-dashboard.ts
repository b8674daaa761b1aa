import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { nodeHandler } from './adapters/node-handler.js';
import { createDashboard, type Dashboard } from './create-dashboard.js';
import type { DashboardOptions } from './dashboard-options.js';

export interface ServeDashboardOptions extends DashboardOptions {
  /** Default 0: any free port (the address is in `url`). */
  readonly port?: number;
  /**
   * Default `127.0.0.1`: only this machine can reach it. Binding elsewhere exposes the runs and
   * their actions to whoever reaches the port: give `authorize` (or `readOnly`) first.
   */
  readonly hostname?: string;
}

export interface DashboardServer {
  /** `http://127.0.0.1:<port>` plus the base path, with a trailing slash. */
  readonly url: string;
  readonly dashboard: Dashboard;
  /** Stops the server and the live streams; waits for the runs the dashboard resumed. The store stays open. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Serves the dashboard alone on node:http, bound to 127.0.0.1 unless told otherwise. On a loopback
 * address it answers only requests whose Host is a loopback name, so a page of another site cannot
 * reach it through a DNS name pointed at 127.0.0.1 (DNS rebinding).
 */
export async function serveDashboard(options: ServeDashboardOptions): Promise<DashboardServer> {
  const { port = 0, hostname = '127.0.0.1', ...dashboardOptions } = options;
  const dashboard = createDashboard(dashboardOptions);
  const handler = nodeHandler(dashboard);
  const loopback = LOOPBACK.has(hostname);
  const server = createServer((request, response) => {
    const host = (request.headers.host ?? '').replace(/:\d+$/, '');
    if (loopback && !LOOPBACK.has(host)) {
      response
        .writeHead(421, { 'content-type': 'text/plain' })
        .end('this dashboard answers only to a loopback host name');
      return;
    }
    handler(request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      void dashboard.close();
      reject(
        new StepwiseError(
          ErrorCodes.CONFIG_INVALID,
          `cannot serve the dashboard on ${hostname}:${port}: ${error.code ?? error.message}`,
          {
            location: error.code === 'EADDRINUSE' || error.code === 'EACCES' ? '/port' : '/hostname',
            cause: error,
          },
        ),
      );
    });
    server.listen(port, hostname, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}${dashboard.basePath}/`,
    dashboard,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await dashboard.close();
      server.closeAllConnections();
      await closed;
    },
  };
}
