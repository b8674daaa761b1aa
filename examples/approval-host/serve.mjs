// Serves the approval page for a workspace's runs on 127.0.0.1.
//
//   node examples/approval-host/serve.mjs --workspace <dir> [--port 8080]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startApprovalHost } from './approval-host.mjs';
import { openEngine } from './open-engine.mjs';

const { values } = parseArgs({
  options: { workspace: { type: 'string', default: process.cwd() }, port: { type: 'string', default: '8080' } },
});
const { engine, store } = await openEngine(path.resolve(values.workspace));
const host = await startApprovalHost({ engine, store, port: Number(values.port) });
console.log(`approval page: ${host.url}`);
const stop = async () => {
  await host.close();
  await store.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
