// Headless Chromium for the tests that look at HTML the way a user would (the run report, the
// documentation site): Debian's chromium driven by playwright-core, a fresh profile per launch.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Whether the browser is installed; tests skip with `skipMessage` when it is not. */
export const chromiumAvailable = existsSync(CHROMIUM);

export function skipMessage(what: string): string {
  return `${what} skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`;
}

/** Launches Chromium with a fresh profile, hands `use` a page, and closes and removes everything after. */
export async function withChromiumPage<T>(
  viewport: { readonly width: number; readonly height: number },
  use: (page: Page) => Promise<T>,
): Promise<T> {
  const { chromium } = await import('playwright-core');
  const profile = await mkdtemp(path.join(os.tmpdir(), 'stepwise-chromium-'));
  // A fresh profile per run; playwright takes it as launchPersistentContext's directory.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    return await use(context.pages()[0] ?? (await context.newPage()));
  } finally {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  }
}
