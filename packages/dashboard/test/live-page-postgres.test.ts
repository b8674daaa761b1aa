import { createPostgresStore } from '@stepwise/store-postgres';
import { startThrowawayPostgres, type ThrowawayPostgres } from '@stepwise/store-postgres/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { type Harness, startHarness } from './dashboard-harness.js';
import { openRunPage, runElsewhere, shapeOf } from './page-helpers.js';

/** A throwaway server from the machine's Postgres binaries, or `STEPWISE_TEST_POSTGRES_URL`. */
async function postgres(): Promise<{ url: string; server?: ThrowawayPostgres } | undefined> {
  const existing = process.env.STEPWISE_TEST_POSTGRES_URL;
  if (existing) return { url: existing };
  try {
    const server = await startThrowawayPostgres();
    return { url: server.url, server };
  } catch (error) {
    console.warn(`dashboard: skipping the Postgres page tests: ${(error as Error).message}`);
    return undefined;
  }
}

const database = chromiumAvailable ? await postgres() : undefined;

describe.skipIf(!chromiumAvailable || !database)('the live page over the Postgres store', () => {
  let harness: Harness;
  // Its own schema: an existing server (STEPWISE_TEST_POSTGRES_URL) may hold other tests' runs.
  const schema = `dashboard_${process.pid}`;
  const url = database?.url as string;
  beforeAll(async () => {
    harness = await startHarness({
      openStore: async () => createPostgresStore({ connectionString: url, schema }),
    });
  });
  afterAll(async () => {
    await harness?.close();
    database?.server?.close();
  });

  it('shows a run another process writes to Postgres as it goes, live', async () => {
    await withChromiumPage({ width: 1300, height: 900 }, async (page) => {
      await page.goto(harness.server.url);
      await page.waitForSelector('#live-state.live');
      const elsewhere = runElsewhere(url, 3, 600, schema);
      const runId = await elsewhere.runId;
      const row = page.locator(`#runs tr[data-run-id="${runId}"]`);
      await row.waitFor({ timeout: 15_000 });
      await row.locator('a').click();
      await page.waitForSelector('#live-state.live');
      await page.waitForSelector('#dag .node.status-running[data-step-id="step-2"]', { timeout: 15_000 });
      elsewhere.release();
      expect(await elsewhere.status()).toBe('completed');
      await page.waitForSelector('body[data-status="completed"]', { timeout: 15_000 });
      expect(await page.locator('#dag .node.status-succeeded').count()).toBe(3);
    });
  });

  it('approves a waiting run from the page: it completes, answered by the person', async () => {
    const waiting = await harness.engine.run({
      id: 'pg-notes',
      goal: 'Write a note in Postgres',
      steps: [{ id: 'write', tool: 'note_write', args: { text: 'from postgres' } }],
    }).result;
    expect(waiting.status).toBe('waiting');
    await withChromiumPage({ width: 1300, height: 900 }, async (page) => {
      await page.goto(harness.server.url);
      const waitingRow = page.locator(`#runs tr[data-run-id="${waiting.runId}"]`);
      expect(await waitingRow.locator('td.waiting').textContent()).toBe('approval of note_write (write) at write');
      await openRunPage(page, harness, waiting.runId);
      await page.locator('.pending-request').getByRole('button', { name: 'Approve' }).click();
      await page.waitForSelector('body[data-status="completed"]');
    });
    expect(await shapeOf(harness.store, waiting.runId)).toContain('approval-response write approve alice');
  });
});

if (!chromiumAvailable) console.warn(skipMessage('the Postgres page tests'));
