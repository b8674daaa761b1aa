import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

if (!hasChromium) {
  console.warn(`report tests in Chromium skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}

/** Runs `use` with a page of a headless Chromium on a fresh profile, closed afterwards. */
export async function withChromiumPage<T>(
  use: (page: Page) => Promise<T>,
  viewport = { width: 1500, height: 1000 },
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
