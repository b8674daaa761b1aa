// Takes the README's screenshots (the runs list, and a run's page while it runs) in headless
// Chromium, from runs made here with the built packages.
//
//   npm run build && node packages/dashboard/scripts/take-screenshots.mjs [out directory]
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineTool, ToolError, ToolRegistry } from '@stepwise/core';
import { serveDashboard } from '@stepwise/dashboard';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { chromium } from 'playwright-core';

const out = path.resolve(process.argv[2] ?? fileURLToPath(new URL('../screenshots/', import.meta.url)));
const directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-screenshots-'));
const store = createSqliteStore({ path: path.join(directory, 'stepwise.db') });
const tools = new ToolRegistry();
const object = (properties) => ({ type: 'object', properties, required: Object.keys(properties) });
tools.register(
  defineTool({
    name: 'run_step',
    description: 'Pretends to work for a while',
    input: object({ ms: { type: 'number' }, command: { type: 'string' } }),
    effect: 'read',
    async execute({ ms, command }) {
      await new Promise((resolve) => setTimeout(resolve, ms));
      if (command.includes('--broken')) throw new ToolError({ code: 'E304', message: `${command} exited with 1` });
      return { exitCode: 0, stdout: `$ ${command}\nok` };
    },
  }),
);
tools.register(
  defineTool({
    name: 'deploy',
    description: 'Deploys (asks a person first)',
    input: object({ target: { type: 'string' } }),
    effect: 'exec',
    async execute({ target }) {
      return { deployed: target };
    },
  }),
);
const engine = dagEngine({ tools, store, concurrency: 4, approvals: { policy: { effects: { exec: 'pause' } } } });
const step = (id, ms, dependsOn = [], command = `npm run ${id}`) => ({
  id,
  tool: 'run_step',
  args: { ms, command },
  ...(dependsOn.length ? { dependsOn } : {}),
});

await engine.run({
  id: 'nightly-import',
  goal: 'Import the nightly data export',
  steps: [step('download', 120), step('validate', 60, ['download']), step('load', 200, ['validate'])],
}).result;
await engine.run({
  id: 'search-index',
  goal: 'Rebuild the search index',
  steps: [step('dump', 80), step('reindex', 40, ['dump'], 'reindex --broken'), step('swap', 10, ['reindex'])],
}).result;
await engine.run({
  id: 'release-notes',
  goal: 'Publish the release notes for 1.2',
  steps: [step('draft', 50), { id: 'publish', tool: 'deploy', args: { target: 'docs site' }, dependsOn: ['draft'] }],
}).result;
const live = engine.run({
  id: 'deploy-staging',
  goal: 'Deploy the web app to staging',
  steps: [
    step('checkout', 400),
    step('install', 900, ['checkout']),
    step('lint', 1200, ['install']),
    step('unit-tests', 2600, ['install']),
    step('e2e-tests', 6000, ['install']),
    step('build', 1500, ['lint', 'unit-tests']),
    { id: 'deploy', tool: 'deploy', args: { target: 'staging' }, dependsOn: ['build', 'e2e-tests'] },
  ],
});

const server = await serveDashboard({ store, resume: (id, options) => engine.resume(id, options) });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
try {
  await mkdir(out, { recursive: true });
  const page = await browser.newPage({ viewport: { width: 1360, height: 560 } });
  await page.goto(server.url);
  await page.waitForSelector('#live-state.live');
  await new Promise((resolve) => setTimeout(resolve, 2600));
  await page.screenshot({ path: path.join(out, 'runs-list.png') });
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${server.url}runs/${live.runId}`);
  await page.waitForSelector('#live-state.live');
  await page.waitForSelector('#dag .node.status-succeeded[data-step-id="lint"]', { timeout: 10_000 });
  await page.locator('#dag [data-step-id="install"]').click();
  await page.screenshot({ path: path.join(out, 'live-run-page.png') });
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
  live.cancel();
  await live.result.catch(() => undefined);
  await server.close();
  await store.close();
  await rm(directory, { recursive: true, force: true });
}
