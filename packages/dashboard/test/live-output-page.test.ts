import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type Plan, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
// The real command tool, from its sources: the dashboard does not depend on it.
import { nodeTools } from '../../tools-node/src/index.js';
import { ARTIFACTS, type Harness, startHarness } from './dashboard-harness.js';
import { openRunPage } from './page-helpers.js';

const PRINT_ELSEWHERE = fileURLToPath(new URL('./fixtures/print-elsewhere.mjs', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!chromiumAvailable)("a running command's output on its step panel", () => {
  let harness: Harness;
  let workspace: string;
  beforeAll(async () => {
    harness = await startHarness();
    await mkdir(ARTIFACTS, { recursive: true });
    workspace = path.join(harness.directory, 'workspace');
    await mkdir(workspace);
    await writeFile(
      path.join(workspace, 'build.js'),
      [
        "const fs = require('node:fs');",
        "console.log('compiling 1 of 2');",
        "console.error('warning: something to look at');",
        // Goes on only once the test saw the first lines on the page.
        "const wait = setInterval(() => { if (fs.existsSync('gate')) { clearInterval(wait); console.log('compiling 2 of 2'); } }, 20);",
        'setTimeout(() => process.exit(3), 60000).unref();',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('streams onto the page while the step runs, then gives way to the result', async () => {
    const tools = new ToolRegistry();
    await tools.use(nodeTools({ workspace, commands: { allow: ['node'] } }));
    const engine = dagEngine({ tools, store: harness.store, approvals: { policy: { effects: { exec: 'auto' } } } });
    const plan: Plan = {
      id: 'live-output',
      goal: 'Build with output shown as it comes',
      steps: [{ id: 'build', tool: 'run_command', args: { command: ['node', 'build.js'] } }],
    };
    const handle = harness.server.dashboard.track(engine.run(plan));
    await withChromiumPage({ width: 1400, height: 900 }, async (page) => {
      await openRunPage(page, harness, handle.runId);
      await page.waitForSelector('#dag .node.status-running[data-step-id="build"]', { timeout: 15_000 });
      await page.locator('#dag [data-step-id="build"]').click();
      const box = page.locator('#details #live-output');
      await page.waitForSelector('#details #live-output:has-text("compiling 1 of 2")', { timeout: 15_000 });
      expect(await box.textContent()).toContain('warning: something to look at');
      // Still running: the output came before the step ended.
      expect(await page.locator('#dag .node.status-running[data-step-id="build"]').count()).toBe(1);
      expect(existsSync(path.join(workspace, 'gate'))).toBe(false);
      await page.screenshot({ path: path.join(ARTIFACTS, 'live-output.png') });
      await writeFile(path.join(workspace, 'gate'), '');
      expect((await handle.result).status).toBe('completed');
      await page.waitForSelector('body[data-status="completed"]', { timeout: 15_000 });
      // The step's result now holds the whole output; the live box is gone.
      await page.waitForSelector('#live-output', { state: 'detached', timeout: 15_000 });
      expect(await page.locator('#details').textContent()).toContain('compiling 2 of 2');
    });
  });

  it('shows the output of a command another process runs, from the store, before its step ends', async () => {
    await rm(path.join(workspace, 'gate'), { force: true });
    const child = spawn(process.execPath, [PRINT_ELSEWHERE, harness.database, workspace], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout });
    const messages: Record<string, string>[] = [];
    lines.on('line', (line) => messages.push(JSON.parse(line)));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      for (let waited = 0; !messages[0] && waited < 30_000; waited += 50) await sleep(50);
      const runId = messages[0]?.runId as string;
      expect(runId).toMatch(/^run_/);
      // Another process's run: its output can reach the page only through the store.
      await withChromiumPage({ width: 1400, height: 900 }, async (page) => {
        await openRunPage(page, harness, runId);
        await page.waitForSelector('#dag .node.status-running[data-step-id="build"]', { timeout: 15_000 });
        await page.locator('#dag [data-step-id="build"]').click();
        await page.waitForSelector('#details #live-output:has-text("compiling 1 of 2")', { timeout: 15_000 });
        expect(await page.locator('#details #live-output').textContent()).toContain('warning: something to look at');
        expect(await page.locator('#dag .node.status-running[data-step-id="build"]').count()).toBe(1);
        expect(existsSync(path.join(workspace, 'gate'))).toBe(false);
        await writeFile(path.join(workspace, 'gate'), '');
        await page.waitForSelector('body[data-status="completed"]', { timeout: 15_000 });
        await page.waitForSelector('#live-output', { state: 'detached', timeout: 15_000 });
      });
      await exited;
      expect(messages[1]).toEqual({ status: 'completed' });
      // Gone from the store with the call, never journaled.
      expect(await harness.store.readLiveOutput?.(runId)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

if (!chromiumAvailable) console.warn(skipMessage('the live output page test'));
