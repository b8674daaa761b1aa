import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Plan, type RunEvent, readAll } from '@stepwise/core';
import { buildReportModel, generateReport } from '@stepwise/dashboard/report';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { createRunner, type Runner } from '../src/create-runner.js';
import { ARTIFACTS, FIXTURES } from './helpers.js';

const CHAIN = Array.from({ length: 12 }, (_, index) => `chain-${index + 1}`);

// `boom` fails (critical) while `slow` is still running: the engine cancels `slow`, which
// therefore ends last. A long chain makes the graph much wider than the window.
const plan: Plan = {
  id: 'failing-report',
  goal: 'Fail on purpose',
  steps: [
    { id: 'setup', tool: 'sleep_ms', args: { ms: 20 } },
    { id: 'slow', tool: 'sleep_ms', args: { ms: 4000 }, dependsOn: ['setup'] },
    {
      id: 'boom',
      tool: 'run_command',
      args: {
        command: ['node', 'emit.js'],
      },
      dependsOn: ['setup'],
    },
    ...CHAIN.map((id, index) => ({
      id,
      tool: 'sleep_ms',
      args: { ms: 1 },
      critical: false,
      dependsOn: [index === 0 ? 'setup' : (CHAIN[index - 1] as string)],
    })),
  ],
};

/**
 * Browser code (as text: this package's types have no DOM) that decodes a PNG screenshot and
 * counts the pixels of the report's accent colour (#2563eb, the selection outline) in an area.
 */
function countAccentPixels(png: string, area: { x: number; y: number; width: number; height: number }): string {
  return `(async () => {
    const image = new Image();
    image.src = 'data:image/png;base64,${png}';
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(${area.x}, ${area.y}, ${area.width}, ${area.height}).data;
    let count = 0;
    for (let index = 0; index < pixels.length; index += 4) {
      const near = (value, target) => Math.abs(value - target) < 40;
      if (near(pixels[index], 0x25) && near(pixels[index + 1], 0x63) && near(pixels[index + 2], 0xeb)) count += 1;
    }
    return count;
  })()`;
}

let directory: string;
let runner: Runner;
let events: RunEvent[];
let file: string;

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-report-failed-'));
  await writeFile(
    path.join(directory, 'emit.js'),
    'console.log("line to stdout");\nconsole.error("line to stderr");\nprocess.exit(3);\n',
  );
  runner = await createRunner({
    engine: 'dag',
    workspace: directory,
    commands: { allow: ['node'] },
    plugins: [path.join(FIXTURES, 'test-plugin.mjs')],
    store: { path: path.join(directory, 'stepwise.db') },
    concurrency: 4,
    approvals: { policy: { tools: { run_command: 'auto' } } },
  });
  const result = await runner.run(plan).result;
  expect(
    result.status,
    JSON.stringify(result.steps.map((step) => [step.stepId, step.status, step.error?.code, step.error?.message])),
  ).toBe('failed');
  events = await readAll(runner.store, result.runId);
  await mkdir(ARTIFACTS, { recursive: true });
  file = path.join(ARTIFACTS, 'report-failed.html');
  await writeFile(file, await generateReport(runner.store, result.runId));
}, 60_000);

afterAll(async () => {
  await runner?.close();
  await rm(directory, { recursive: true, force: true });
});

describe('report model of a failed run', () => {
  it('names the failing step and keeps the cancelled step off the critical path', () => {
    const model = buildReportModel(events);
    expect(model.failingStepId).toBe('boom');
    const slow = model.steps.find((step) => step.id === 'slow');
    expect(slow?.status).toBe('cancelled');
    // The cancelled step ended last; the path ends at the step that failed the run instead.
    const ends = new Map(model.bars.map((bar) => [bar.stepId, bar.end]));
    expect(ends.get('slow')).toBeGreaterThanOrEqual(ends.get('boom') ?? Number.POSITIVE_INFINITY);
    expect(model.criticalPath).toEqual(['setup', 'boom']);
    expect(model.bars.filter((bar) => bar.critical).map((bar) => bar.stepId)).not.toContain('slow');
  });
});

describe.skipIf(!chromiumAvailable)('failed run report in headless Chromium', () => {
  it('opens on the failing step, names it in the header, shows each stream once, and scrolls a wide graph', async () => {
    await withChromiumPage({ width: 1500, height: 1000 }, async (page) => {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(pathToFileURL(file).href);

      expect(await page.title()).toContain('failed at boom');
      expect(await page.locator('#run-failure').textContent()).toMatch(/Failed at step boom \(run_command\): E304/);
      const details = page.locator('#details');
      expect(await details.getAttribute('data-step-id')).toBe('boom');
      const text = (await details.textContent()) ?? '';
      expect(text).toContain('E304');
      // Each stream is one block (the error message quotes stderr's last line, as the tool words it).
      expect(await details.locator('pre', { hasText: 'line to stdout' }).count()).toBe(1);
      expect(await details.locator('pre', { hasText: 'line to stderr' }).count()).toBe(1);
      expect(await page.getAttribute('#dag g.node[data-step-id="boom"]', 'class')).toContain('selected');

      // The graph keeps its natural size and scrolls; "fit" scales it into the box, "100%" back.
      const natural = Number(await page.getAttribute('#dag', 'width'));
      expect(natural).toBeGreaterThan(1400);
      const box = page.locator('#graph-scroll');
      expect(await box.evaluate((node) => node.scrollWidth)).toBeGreaterThanOrEqual(natural);
      await page.click('.zoom [data-zoom="fit"]');
      const fitted = Number(await page.getAttribute('#dag', 'width'));
      expect(fitted).toBeLessThanOrEqual(await box.evaluate((node) => node.clientWidth));
      await page.click('.zoom [data-zoom="reset"]');
      expect(Number(await page.getAttribute('#dag', 'width'))).toBe(natural);

      await page.locator('#dag g.node[data-step-id="boom"]').scrollIntoViewIfNeeded();
      const shot = await page.screenshot({ path: path.join(ARTIFACTS, 'report-failed.png'), fullPage: true });
      // The screenshot itself shows the selection: the accent outline around the failing step's node.
      const node = await page.locator('#dag g.node[data-step-id="boom"] rect.box').boundingBox();
      expect(node).not.toBeNull();
      const scroll = (await page.evaluate('({ x: window.scrollX, y: window.scrollY })')) as { x: number; y: number };
      const area = {
        x: Math.max(0, Math.floor((node?.x ?? 0) + scroll.x - 4)),
        y: Math.max(0, Math.floor((node?.y ?? 0) + scroll.y - 4)),
        width: Math.ceil((node?.width ?? 0) + 8),
        height: Math.ceil((node?.height ?? 0) + 8),
      };
      const accentPixels = Number(await page.evaluate(countAccentPixels(shot.toString('base64'), area)));
      // A 3 px outline around a 176 × 46 box is well over 400 pixels; an unselected node has none.
      expect(accentPixels).toBeGreaterThan(400);
      expect(errors).toEqual([]);
    });
  }, 60_000);
});

if (!chromiumAvailable) console.warn(skipMessage('failed-run report test in Chromium'));
