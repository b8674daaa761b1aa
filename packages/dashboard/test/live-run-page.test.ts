import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { ARTIFACTS, eventually, type Harness, startHarness } from './dashboard-harness.js';
import { runElsewhere } from './page-helpers.js';

describe.skipIf(!chromiumAvailable)('a run written by another process, on the live page (SQLite)', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness();
    await mkdir(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('appears in the runs list and its page follows it to the end, without a reload', async () => {
    await withChromiumPage({ width: 1400, height: 900 }, async (page) => {
      await page.goto(harness.server.url);
      await page.waitForSelector('#live-state.live');
      expect(await page.locator('#runs tbody tr').count()).toBe(0);

      const elsewhere = runElsewhere(harness.database, 4, 700);
      const runId = await elsewhere.runId;
      const row = page.locator(`#runs tr[data-run-id="${runId}"]`);
      await row.waitFor({ timeout: 15_000 });
      expect(await row.getAttribute('data-status')).toBe('running');
      expect(await row.locator('td.goal').textContent()).toBe('A run written by another process');
      await page.screenshot({ path: path.join(ARTIFACTS, 'runs-list.png') });

      await row.locator('a').click();
      await page.waitForSelector('body.run-page');
      await page.waitForSelector('#live-state.live');
      // Steps start one after another in the other process; the page shows each without a reload.
      await page.waitForSelector('#dag .node.status-running[data-step-id="step-2"]', { timeout: 15_000 });
      expect(await page.locator('#dag .node.status-succeeded[data-step-id="step-1"]').count()).toBe(1);
      // A reload would lose this.
      await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
      await page.locator('#dag [data-step-id="step-1"]').click();
      expect(await page.locator('#details').getAttribute('data-step-id')).toBe('step-1');
      await page.screenshot({ path: path.join(ARTIFACTS, 'live-run-page.png') });
      elsewhere.release();
      expect(await elsewhere.status()).toBe('completed');
      await page.waitForSelector('body[data-status="completed"]', { timeout: 15_000 });
      expect(await page.locator('#dag .node.status-succeeded').count()).toBe(4);
      expect(await page.locator('#run-status').textContent()).toBe('completed');
      expect(await page.locator('#events li').count()).toBeGreaterThan(4);
      // The selection survived every update, and nothing reloaded the page.
      expect(await page.locator('#details').getAttribute('data-step-id')).toBe('step-1');
      expect(await page.locator('#dag .node.selected').getAttribute('data-step-id')).toBe('step-1');
      expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);

      await page.goto(harness.server.url);
      await eventually(async () => (await row.getAttribute('data-status')) === 'completed');
    });
  });
});

if (!chromiumAvailable) console.warn(skipMessage('the live page tests'));
