/**
 * Child process of the SIGKILL tests: runs an approved plan into a SQLite file until a
 * `stall_*` tool blocks, then waits to be killed. Arguments: database path, side file, plan
 * file, authorization file.
 */
import { readFileSync } from 'node:fs';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { sequentialEngine } from '../../src/index.js';
import { crashTools } from './crash-tools.js';

const [storePath, sideFile, planFile, authorizationFile] = process.argv.slice(2) as [string, string, string, string];

const store = createSqliteStore({ path: storePath });
const engine = sequentialEngine({
  tools: crashTools(sideFile, { stall: true }),
  store,
  owner: 'child',
  leaseTtlMs: 1000,
});
const handle = engine.run(JSON.parse(readFileSync(planFile, 'utf8')), {
  authorization: JSON.parse(readFileSync(authorizationFile, 'utf8')),
});
handle.result.then(
  (result) => {
    process.stdout.write(`${JSON.stringify({ finished: result.status })}\n`);
    process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);
// A stalled tool is a promise that never settles; this keeps the process alive until the kill.
setInterval(() => undefined, 1000);
