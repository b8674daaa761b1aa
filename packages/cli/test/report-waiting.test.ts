import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { type Plan, type RunEvent, readAll, respond } from '@stepwise/core';
import { buildReportModel, generateReport } from '@stepwise/dashboard/report';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { createRunner } from '../src/create-runner.js';
import { loadPluginModule } from '../src/load-plugins.js';
import { ARTIFACTS, FIXTURES, inProcess } from './helpers.js';

/** How long the person takes to answer: long against the steps' own few milliseconds. */
const ANSWER_DELAY_MS = 1200;

// `slow` works longest; `gate` waits for a person and `after` follows it, so by the clock `after`
// ends last although `slow` is the chain that decides the run's length when no one keeps it waiting.
const plan: Plan = {
  id: 'waiting-report',
  goal: 'Wait for a person',
  steps: [
    { id: 'slow', tool: 'sleep_ms', args: { ms: 300 } },
    { id: 'gate', tool: 'sleep_ms', args: { ms: 5 }, requiresApproval: true },
    { id: 'after', tool: 'sleep_ms', args: { ms: 5 }, dependsOn: ['gate'] },
  ],
};

let directory: string;
let database: string;
let runId: string;
let events: RunEvent[];
let handlerEvents: RunEvent[];

const tools = async () => [await loadPluginModule(path.join(FIXTURES, 'test-plugin.mjs'), FIXTURES)];

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-report-waiting-'));
  database = path.join(directory, 'stepwise.db');
  const options = {
    engine: 'dag' as const,
    workspace: directory,
    tools: await tools(),
    store: { path: database },
    approvals: { policy: { nonInteractive: 'pause' as const } },
  };
  const first = await createRunner(options);
  const waiting = await first.run(plan).result;
  expect(waiting.status).toBe('waiting');
  runId = waiting.runId;
  await first.close();

  await sleep(ANSWER_DELAY_MS);
  const second = await createRunner(options);
  try {
    // Linked into the run's keyed chain with the runner's key (the user's, as the CLI's).
    await respond(
      second.store,
      runId,
      { stepId: 'gate', decision: 'approve', by: 'alice' },
      {
        ...(second.journalKey === undefined ? {} : { journalKey: second.journalKey }),
      },
    );
    expect((await second.resume(runId).result).status).toBe('completed');
    events = await readAll(second.store, runId);
    await mkdir(ARTIFACTS, { recursive: true });
    await writeFile(path.join(ARTIFACTS, 'report-waiting.html'), await generateReport(second.store, runId));
  } finally {
    await second.close();
  }

  // A handler that takes its time to approve: the wait is inside the attempt.
  const interactive = await createRunner({
    ...options,
    store: { path: path.join(directory, 'handler.db') },
    approvals: {
      handler: async () => {
        await sleep(800);
        return { decision: 'approve', by: 'bob' };
      },
    },
  });
  try {
    const result = await interactive.run({ id: 'slow-answer', steps: [plan.steps[1] as Plan['steps'][number]] }).result;
    expect(result.status).toBe('completed');
    handlerEvents = await readAll(interactive.store, result.runId);
  } finally {
    await interactive.close();
  }
}, 60_000);

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('waiting time apart from working time', () => {
  it('show prints each step’s working time and its wait for a person', async () => {
    const json = await inProcess(['show', runId, '--db', database, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const shown = JSON.parse(json.stdout) as {
      run: { waitingMs: number };
      steps: { stepId: string; toolMs: number; waitingMs: number }[];
    };
    const gate = shown.steps.find((step) => step.stepId === 'gate');
    expect(gate?.waitingMs).toBeGreaterThanOrEqual(ANSWER_DELAY_MS);
    expect(gate?.toolMs).toBeLessThan(ANSWER_DELAY_MS / 4);
    expect(shown.steps.find((step) => step.stepId === 'slow')).toMatchObject({ waitingMs: 0 });
    expect(shown.steps.find((step) => step.stepId === 'slow')?.toolMs).toBeGreaterThanOrEqual(300);
    expect(shown.run.waitingMs).toBe(gate?.waitingMs);

    const text = await inProcess(['show', runId, '--db', database]);
    expect(text.code, text.stderr).toBe(0);
    const gateLine = text.stdout.split('\n').find((line) => line.trimStart().startsWith('gate '));
    // The wait as journaled, to a tenth of a second (a loaded machine answers later than the delay).
    expect(gateLine).toContain(`waited ${((gate?.waitingMs ?? 0) / 1000).toFixed(1)}s`);
    expect(text.stdout.split('\n').find((line) => line.trimStart().startsWith('slow '))).not.toContain('waited');
    expect(text.stdout).toMatch(/\d\.\ds waiting for a person/);
  });

  it('the report keeps waits off the bars’ working time and off the critical path', () => {
    const model = buildReportModel(events);
    const step = (id: string) => model.steps.find((detail) => detail.id === id);
    expect(step('gate')?.waitingMs).toBeGreaterThanOrEqual(ANSWER_DELAY_MS);
    expect(step('gate')?.toolMs).toBeLessThan(ANSWER_DELAY_MS / 4);
    expect(model.waits.map((wait) => wait.stepId)).toEqual(['gate']);
    expect(model.waitingMs).toBeGreaterThanOrEqual(ANSWER_DELAY_MS);
    // By the clock, `after` ended last: a path by finish times would run through the wait.
    const end = (id: string) => Math.max(...model.bars.filter((bar) => bar.stepId === id).map((bar) => bar.end));
    expect(end('after')).toBeGreaterThan(end('slow') + ANSWER_DELAY_MS / 2);
    expect(model.criticalPath).toEqual(['slow']);
    expect(model.bars.filter((bar) => bar.critical).map((bar) => bar.stepId)).toEqual(['slow']);
  });

  it('an approval handler’s wait is counted inside its attempt as waiting, not as the tool’s time', () => {
    const model = buildReportModel(handlerEvents);
    const [bar] = model.bars;
    expect(bar?.end).toBeGreaterThanOrEqual(800);
    expect(bar?.waitingMs).toBeGreaterThanOrEqual(800);
    expect(model.steps[0]?.toolMs).toBeLessThan(400);
    expect(model.steps[0]?.waitingMs).toBe(bar?.waitingMs);
  });
});

describe.skipIf(!chromiumAvailable)('waiting in the report, in headless Chromium', () => {
  it('draws the wait as its own hatched mark and names it in the step details', async () => {
    await withChromiumPage({ width: 1500, height: 1000 }, async (page) => {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(pathToFileURL(path.join(ARTIFACTS, 'report-waiting.html')).href);
      const waits = page.locator('#timeline rect.wait[data-step-id="gate"]');
      expect(await waits.count()).toBe(1);
      expect(Number(await waits.getAttribute('data-waiting-ms'))).toBeGreaterThanOrEqual(ANSWER_DELAY_MS);
      expect(await page.locator('#timeline rect.wait').count()).toBe(1);
      expect(await page.locator('#timeline rect.bar.critical').count()).toBe(1);
      expect(await page.getAttribute('#timeline rect.bar.critical', 'data-step-id')).toBe('slow');
      const row = await page.locator('#steps tr[data-step-id="gate"]').textContent();
      expect(row).toMatch(/waiting/);

      await page.click('#steps tr[data-step-id="gate"]');
      const details = page.locator('#details');
      await expect.poll(() => details.getAttribute('data-step-id')).toBe('gate');
      const text = (await details.textContent()) ?? '';
      // Seconds and a tenth, as journaled: at least the delay, later on a loaded machine.
      const waited = /waiting for a person\s*(\d+\.\d)s/.exec(text)?.[1];
      expect(Number(waited) * 1000).toBeGreaterThanOrEqual(ANSWER_DELAY_MS - 50);
      expect(text).toMatch(/working time\s*\d+ms/);
      await page.screenshot({ path: path.join(ARTIFACTS, 'report-waiting.png'), fullPage: true });
      expect(errors).toEqual([]);
    });
  }, 60_000);
});

if (!chromiumAvailable) console.warn(skipMessage('waiting report test in Chromium'));
