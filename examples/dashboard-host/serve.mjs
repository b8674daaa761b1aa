// Starts the host app and one run that waits for a person to approve its write, then prints the
// addresses. Stop it with Ctrl-C.
//
//   node examples/dashboard-host/serve.mjs [--workspace DIR] [--port 8080]
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startHost } from './host-app.mjs';

const { values } = parseArgs({
  options: { workspace: { type: 'string', default: process.cwd() }, port: { type: 'string', default: '8080' } },
});
const workspace = path.resolve(values.workspace);
mkdirSync(path.join(workspace, '.stepwise'), { recursive: true });
const host = await startHost({ workspace, port: Number(values.port) });
const run = host.engine.run({
  id: 'release-notes',
  goal: 'Publish the release notes',
  steps: [{ id: 'publish', tool: 'note_publish', args: { text: 'Version 1.2 is out.' } }],
});
const { status } = await run.result;
console.log(JSON.stringify({ host: `${host.url}/`, dashboard: `${host.url}/stepwise/`, runId: run.runId, status }));
const stop = async () => {
  await host.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
