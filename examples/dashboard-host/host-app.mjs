// A host application with its own HTTP server, its engine and its journal, into which the
// Stepwise dashboard is mounted with one line (see `mountDashboard` below).
import { createServer } from 'node:http';
import path from 'node:path';
import { defineTool, ToolRegistry } from '@stepwise/core';
import { createDashboard, mountDashboard } from '@stepwise/dashboard';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';

/** The host's one tool: it "publishes" a note; a person approves every write first. */
const publish = defineTool({
  name: 'note_publish',
  description: 'Publishes a release note',
  input: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  effect: 'write',
  async execute({ text }) {
    return { published: text };
  },
});

/** The host's own routes: what it served before the dashboard came. */
function hostRoutes(request, response) {
  if (request.url === '/') {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end('<h1>Release desk</h1><p>Runs: <a href="/stepwise/">/stepwise/</a></p>');
    return;
  }
  response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
}

/**
 * Starts the host on 127.0.0.1 with its journal in `<workspace>/.stepwise/stepwise.db`. Returns
 * `{ url, engine, store, close() }`.
 */
export async function startHost({ workspace, port = 0 }) {
  const tools = new ToolRegistry();
  tools.register(publish);
  const store = createSqliteStore({ path: path.join(workspace, '.stepwise', 'stepwise.db') });
  const engine = dagEngine({ tools, store, approvals: { policy: { effects: { write: 'pause' } } } });
  const server = createServer(hostRoutes);

  // The one line: the dashboard answers under /stepwise, every other request stays the host's.
  mountDashboard(
    server,
    createDashboard({ store, basePath: '/stepwise', resume: (id, options) => engine.resume(id, options) }),
  );

  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    engine,
    store,
    async close() {
      await new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      });
      await store.close();
    },
  };
}
