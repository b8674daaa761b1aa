// Starts a run that needs a person: it reads a file freely, then waits before writing one.
// Prints one JSON line: { runId, status } (status `waiting`).
//
//   node examples/approval-host/start-run.mjs --workspace <dir>
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openEngine } from './open-engine.mjs';

const { values } = parseArgs({ options: { workspace: { type: 'string', default: process.cwd() } } });
const workspace = path.resolve(values.workspace);
mkdirSync(path.join(workspace, '.stepwise'), { recursive: true });
writeFileSync(path.join(workspace, 'release.txt'), 'version 1.2.0\n');

const plan = {
  id: 'publish-notes',
  goal: 'Publish the release notes',
  steps: [
    { id: 'read', tool: 'file_read', args: { path: 'release.txt' } },
    {
      id: 'publish',
      tool: 'file_write',
      dependsOn: ['read'],
      description: 'Write the release notes',
      args: { path: 'NOTES.md', contents: '# Release notes\n\n<b>Approved</b> by a person over HTTP.\n' },
    },
  ],
};

const { engine, store } = await openEngine(workspace);
try {
  const result = await engine.run(plan).result;
  console.log(JSON.stringify({ runId: result.runId, status: result.status }));
} finally {
  await store.close();
}
