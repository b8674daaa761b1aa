// The dashboard at scale: a SQLite store holding 10,000 runs (one step each) and one run of 10,000
// steps (a chain of no-op steps). Prints how long the runs list's first page takes to answer (the
// HTML page and its JSON), a search over the store, and the run page of the 10,000-step run: the
// server's time and size, and — when Chromium is installed (/usr/bin/chromium) — the browser's time
// to load it, to select a step and to apply one live update.
// A live page draws at most 1,000 of a larger run's steps (the dashboard README says which).
// The protocol of bench/README.md: a collection before each timed run, one warm-up, the median of
// ROUNDS. Not a comparison with a peer: no peer dashboard runs in-process. What it prints is
// written to bench/results/large.json for the README.
// Usage: node bench/dashboard/large.mjs [runs] [steps]
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, ToolRegistry } from '@stepwise/core';
import { createDashboard } from '@stepwise/dashboard';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { z } from 'zod';
import { machineLine, median, requireGc, timed, writeResults } from '../_protocol.mjs';

requireGc();

const RUNS = Number(process.argv[2] ?? 10_000);
const STEPS = Number(process.argv[3] ?? 10_000);
const ROUNDS = 5;
const rows = [];

async function time(label, fn) {
  await fn();
  const samples = [];
  let size = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const { ms, value } = await timed(fn);
    samples.push(ms);
    size = value;
  }
  console.log(
    `${label.padEnd(44)} ${median(samples).toFixed(1).padStart(8)} ms${size ? `  ${(size / 1024).toFixed(0)} KB` : ''}`,
  );
  rows.push({ label, ms: median(samples).toFixed(1), kb: size ? (size / 1024).toFixed(0) : undefined });
  return median(samples);
}

const directory = mkdtempSync(join(tmpdir(), 'stepwise-dashboard-bench-'));
const store = createSqliteStore({ path: join(directory, 'stepwise.db') });
const tools = new ToolRegistry([
  defineTool({
    name: 'noop',
    description: 'nothing',
    input: z.object({}),
    effect: 'read',
    execute: () => ({ ok: true }),
  }),
]);
const engine = dagEngine({ tools, store, durability: 'batched' });
console.log(`dashboard at scale · ${RUNS} runs, a ${STEPS}-step run · ${machineLine()}`);
let started = performance.now();
for (let index = 0; index < RUNS; index++) {
  await engine.run({
    id: `small-${index}`,
    goal: `small run number ${index}`,
    steps: [{ id: 'a', tool: 'noop', args: {} }],
  }).result;
}
console.log(`  (filling: ${RUNS} runs in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
started = performance.now();
const steps = Array.from({ length: STEPS }, (_, index) => ({
  id: `s${index}`,
  tool: 'noop',
  args: {},
  ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
}));
const big = await engine.run({ id: 'big', goal: 'a run of many steps', steps }).result;
console.log(`  (filling: a ${STEPS}-step run in ${((performance.now() - started) / 1000).toFixed(1)} s)`);

const dashboard = createDashboard({ store });
const get = async (path) => {
  const response = await dashboard.fetch(new Request(`http://127.0.0.1${path}`));
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${text.slice(0, 200)}`);
  return text.length;
};
await time('runs list, first page (HTML)', () => get('/'));
await time('runs list, first page (JSON)', () => get('/api/runs?page=0'));
await time('runs list, page 100 (JSON)', () => get('/api/runs?page=100'));
await time('runs list, search "number 9999" (JSON)', () => get('/api/runs?q=number%209999'));
await time(`run page of ${STEPS} steps (HTML, server)`, () => get(`/runs/${big.runId}`));
await time(`run view of ${STEPS} steps (JSON, server)`, () => get(`/api/runs/${big.runId}`));

if (existsSync('/usr/bin/chromium')) {
  const { serveDashboard } = await import('@stepwise/dashboard');
  const { chromium } = await import('playwright-core');
  const served = await serveDashboard({ store, port: 0 });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await time(`browser: load the ${STEPS}-step run page`, async () => {
    await page.goto(`${served.url}runs/${big.runId}`, { waitUntil: 'load' });
    await page.waitForSelector('#live-state.live');
    return 0;
  });
  await time('browser: select a step (click → details)', async () => {
    await page
      .locator(`#steps [data-step-id="s${STEPS - 1}"]`)
      .first()
      .click();
    await page.waitForSelector(`#details[data-step-id="s${STEPS - 1}"]`);
    return 0;
  });
  // What the page does with a `view` message (the server's drawing is timed above): parse it and
  // swap the pieces in, then lay the page out.
  const view = await (await fetch(`${served.url}api/runs/${big.runId}`)).text();
  await time('browser: apply one live update (view message)', () =>
    page.evaluate((text) => {
      const next = JSON.parse(text);
      document.getElementById('timeline-scroll').innerHTML = next.parts.timeline;
      document.getElementById('graph-scroll').innerHTML = next.parts.graph;
      document.getElementById('steps').outerHTML = next.parts.steps;
      window.stepwiseReport.update(next.data);
      document.body.getBoundingClientRect();
      return 0;
    }, view),
  );
  await browser.close();
  await served.close();
} else console.log('browser measurements skipped: /usr/bin/chromium is not installed');
console.log(`at the end: ${machineLine()}`);
await store.close();
rmSync(directory, { recursive: true, force: true });
writeResults('large', { runs: RUNS, steps: STEPS, rounds: ROUNDS, rows });
