import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Plan, type RunEvent, readAll } from '@stepwise/core';
import { buildReportModel, generateReport } from '@stepwise/dashboard/report';
import { complete, scriptedModel, toolCall } from '@stepwise/engine-agentic/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { createRunner, type Runner } from '../src/create-runner.js';
import { loadPluginModule } from '../src/load-plugins.js';
import { ARTIFACTS, FIXTURES } from './helpers.js';

const HOSTILE = '</script><img src=x onerror="window.__pwned=1">';

const plan: Plan = {
  id: 'report-demo',
  goal: 'Exercise every part of the report',
  steps: [
    { id: 'fetch', tool: 'sleep_ms', args: { ms: 150 }, description: 'Fetch the inputs' },
    {
      id: 'parse',
      tool: 'flaky',
      args: { key: 'parse' },
      dependsOn: ['fetch'],
      retry: { maxAttempts: 3, initialDelayMs: 60, jitter: 0 },
    },
    { id: 'lint', tool: 'sleep_ms', args: { ms: 20, label: HOSTILE }, dependsOn: ['fetch'] },
    {
      id: 'broken',
      tool: 'sleep_ms',
      args: { ms: 10 },
      timeoutMs: 1,
      retry: { maxAttempts: 1 },
      critical: false,
      dependsOn: ['fetch'],
    },
    { id: 'after-broken', tool: 'sleep_ms', args: { ms: 10 }, dependsOn: ['broken'] },
    { id: 'gate', tool: 'sleep_ms', args: { ms: 5 }, requiresApproval: true, dependsOn: ['fetch'] },
    { id: 'build', tool: 'sleep_ms', args: { ms: 100 }, dependsOn: ['parse', 'lint'] },
    { id: 'summary', tool: 'sleep_ms', args: { ms: 30 }, dependsOn: ['build', 'fetch'] },
  ],
};

let directory: string;
let runner: Runner;
let events: RunEvent[];
let html: string;

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-report-'));
  runner = await createRunner({
    engine: 'dag',
    workspace: directory,
    tools: [await loadPluginModule(path.join(FIXTURES, 'test-plugin.mjs'), FIXTURES)],
    store: { path: path.join(directory, 'stepwise.db') },
    concurrency: 4,
    approvals: { handler: async () => ({ decision: 'approve', by: 'reviewer', reason: 'looks safe' }) },
  });
  const handle = runner.run(plan);
  const result = await handle.result;
  expect(result.status).toBe('partial');
  events = await readAll(runner.store, result.runId);
  html = await generateReport(runner.store, result.runId);
  await mkdir(ARTIFACTS, { recursive: true });
  await writeFile(path.join(ARTIFACTS, 'report.html'), html);

  // An agentic run, for the model turns.
  const agentic = await createRunner({
    engine: 'agentic',
    workspace: directory,
    tools: [await loadPluginModule(path.join(FIXTURES, 'test-plugin.mjs'), FIXTURES)],
    store: { path: path.join(directory, 'agentic.db') },
    model: scriptedModel([toolCall('sleep_ms', { ms: 1, label: 'from-the-model' }), complete('napped')]),
  });
  try {
    const result = await agentic.run({ id: 'agentic-report', steps: [{ id: 'nap', description: 'Nap briefly' }] })
      .result;
    expect(result.status).toBe('completed');
    await writeFile(path.join(ARTIFACTS, 'report-agentic.html'), await generateReport(agentic.store, result.runId));
  } finally {
    await agentic.close();
  }
}, 60_000);

afterAll(async () => {
  await runner?.close();
  await rm(directory, { recursive: true, force: true });
});

describe('report model', () => {
  it('has one bar per execution (attempt), retries included', () => {
    const model = buildReportModel(events);
    const starts = events.filter((event) => event.type === 'step-start');
    expect(model.bars).toHaveLength(starts.length);
    expect(model.bars.filter((bar) => bar.stepId === 'parse').map((bar) => [bar.attempt, bar.status])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(model.bars.some((bar) => bar.stepId === 'after-broken')).toBe(false);
    expect(model.steps.find((step) => step.id === 'after-broken')?.status).toBe('skipped');
    expect(model.steps.find((step) => step.id === 'broken')?.result?.error?.code).toBe('E306');
  });

  it('finds the critical path through the dependencies that finished last', () => {
    const model = buildReportModel(events);
    expect(model.criticalPath).toEqual(['fetch', 'parse', 'build', 'summary']);
    expect(model.steps.find((step) => step.id === 'gate')?.approvals[0]).toMatchObject({
      decision: 'approved',
      by: 'reviewer',
      source: 'handler',
    });
    expect(model.bars.filter((bar) => bar.critical).map((bar) => bar.stepId)).toEqual([
      'fetch',
      'parse',
      'parse',
      'build',
      'summary',
    ]);
  });

  it('is one self-contained file: no external URL, hostile output escaped', () => {
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
    expect(html).not.toContain('<img src=x');
    // Only the two scripts of the report itself.
    expect(html.match(/<script/g)).toHaveLength(2);
  });
});

describe.skipIf(!chromiumAvailable)('report in headless Chromium', () => {
  it('draws every step, one bar per execution, and shows a step on click', async () => {
    await withChromiumPage({ width: 1500, height: 1000 }, async (page) => {
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      const file = path.join(ARTIFACTS, 'report.html');
      await page.goto(pathToFileURL(file).href);

      const drawn = await page.$$eval('#dag g.node', (nodes) => nodes.map((node) => node.getAttribute('data-step-id')));
      expect(drawn.sort()).toEqual(plan.steps.map((step) => step.id).sort());
      const starts = events.filter((event) => event.type === 'step-start').length;
      expect(await page.locator('#timeline rect.bar').count()).toBe(starts);
      expect(await page.locator('#timeline rect.bar[data-step-id="parse"]').count()).toBe(2);
      expect(await page.locator('#timeline rect.bar.critical').count()).toBe(5);
      expect(await page.getAttribute('#dag g.node[data-step-id="broken"]', 'class')).toContain('status-failed');
      expect(await page.getAttribute('#dag g.node[data-step-id="after-broken"]', 'class')).toContain('status-skipped');

      await page.click('#dag g.node[data-step-id="parse"]');
      const details = page.locator('#details');
      await expect.poll(() => details.getAttribute('data-step-id')).toBe('parse');
      const text = await details.textContent();
      expect(text).toContain('attempt 2');
      expect(text).toContain('transient failure');
      expect(await page.locator('#timeline rect.bar.selected').count()).toBe(2);

      await page.click('#timeline rect.bar[data-step-id="lint"]');
      await expect.poll(() => details.getAttribute('data-step-id')).toBe('lint');
      expect(await details.textContent()).toContain('</script><img src=x onerror=');
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();

      await page.click('#steps tr[data-step-id="gate"]');
      await expect.poll(() => details.getAttribute('data-step-id')).toBe('gate');
      expect(await details.textContent()).toMatch(/sleep_ms: approved.*by\s*reviewer/s);

      await page.goto(pathToFileURL(path.join(ARTIFACTS, 'report-agentic.html')).href);
      await page.click('#dag g.node[data-step-id="nap"]');
      await expect.poll(() => details.getAttribute('data-step-id')).toBe('nap');
      const agenticText = await details.textContent();
      expect(agenticText).toContain('Model turns');
      expect(agenticText).toMatch(/turn 1 · scripted/);
      expect(agenticText).toContain('from-the-model');
      await page.screenshot({ path: path.join(ARTIFACTS, 'report-agentic.png'), fullPage: true });

      await page.goto(pathToFileURL(file).href);
      await page.click('#dag g.node[data-step-id="parse"]');
      await page.screenshot({ path: path.join(ARTIFACTS, 'report.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests.every((url) => url.startsWith('file:'))).toBe(true);
    });
  }, 60_000);
});

if (!chromiumAvailable) console.warn(skipMessage('report test in Chromium'));
