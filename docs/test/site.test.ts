// The documentation site (`npm run docs`: TypeDoc over the READMEs, docs/ and the TSDoc of every
// package) builds, has an API reference for every package, and its front page renders in a
// headless browser: the README's Quick start, navigation to every package, no script errors.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../scripts/headless-chromium.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const ARTIFACTS = path.join(HERE, 'test-artifacts');
const SITE = path.join(ARTIFACTS, 'site');
const PACKAGES = readdirSync(path.join(ROOT, 'packages')).map(
  (folder) => JSON.parse(readFileSync(path.join(ROOT, 'packages', folder, 'package.json'), 'utf8')).name as string,
);

let build: { status: number | null; output: string };

beforeAll(() => {
  rmSync(SITE, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  // The configuration `npm run docs` uses, written elsewhere; warnings (broken links, bad TSDoc) fail.
  const outcome = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--out', SITE, '--treatWarningsAsErrors'],
    { cwd: ROOT, encoding: 'utf8', timeout: 420_000 },
  );
  build = { status: outcome.status, output: `${outcome.stdout}\n${outcome.stderr}` };
}, 480_000);

afterAll(() => rmSync(SITE, { recursive: true, force: true }));

describe('documentation site', () => {
  it('builds without warnings', () => {
    expect(build.status, build.output).toBe(0);
    expect(existsSync(path.join(SITE, 'index.html'))).toBe(true);
  });

  it('has an API reference page for every package and the guide', () => {
    const html = readdirSync(SITE, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.html'));
    const text = html.map((file) => readFileSync(path.join(SITE, file), 'utf8')).join('\n');
    for (const name of PACKAGES) expect(text, name).toContain(name);
    // Functions from the TSDoc of three packages, each with its own page.
    for (const page of ['createRunner', 'dagEngine', 'validatePlan'])
      expect(html.some((file) => path.basename(file).endsWith(`.${page}.html`), page)).toBe(true);
    expect(text).toContain('Writing a Stepwise plugin');
  });

  it.skipIf(!chromiumAvailable)('renders its front page in headless Chromium', async () => {
    const screenshot = path.join(ARTIFACTS, 'docs-site.png');
    await withChromiumPage({ width: 1280, height: 900 }, async (page) => {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(pathToFileURL(path.join(SITE, 'index.html')).href);
      await page.waitForLoadState('load');
      expect(await page.title()).toContain('Stepwise');
      const heading = page.locator('h1, h2', { hasText: 'Quick start' });
      expect(await heading.count()).toBeGreaterThan(0);
      expect(await heading.first().isVisible()).toBe(true);
      // The code block of the Quick start is highlighted, not raw text.
      expect(await page.locator('pre code').first().isVisible()).toBe(true);
      // The navigation (filled by a script on load) links every package's API reference.
      const moduleLink = (name: string) =>
        `.tsd-navigation a[href*="modules/${name.replace('@stepwise/', '_stepwise_')}.html"]`;
      await expect.poll(() => page.locator(moduleLink('@stepwise/cli')).count()).toBeGreaterThan(0);
      for (const name of PACKAGES) expect(await page.locator(moduleLink(name)).count(), name).toBeGreaterThan(0);
      await page.screenshot({ path: screenshot, fullPage: false });
      expect(errors).toEqual([]);
    });
    // A rendered page, not an empty canvas: a blank 1280×900 PNG compresses to a few kilobytes.
    expect(statSync(screenshot).size).toBeGreaterThan(30_000);
  });
});

if (!chromiumAvailable) console.warn(skipMessage('documentation site screenshot'));
