// The documentation site (`npm run docs`: TypeDoc over the READMEs, docs/ and the TSDoc of every
// package) builds, has an API reference for every package, and its pages render in a headless
// browser: the README's Quick start, navigation to every package, the architecture diagram drawn
// from the README's mermaid block (offline), "On this page" with each heading's whole text, the
// site's title once, no script errors.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
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

  it.skipIf(!chromiumAvailable)("draws the README's architecture diagram from its mermaid block, offline", async () => {
    const screenshot = path.join(ARTIFACTS, 'architecture-diagram.png');
    await withChromiumPage({ width: 1280, height: 900 }, async (page) => {
      const errors: string[] = [];
      const requests: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('request', (request) => requests.push(request.url()));
      await page.goto(pathToFileURL(path.join(SITE, 'index.html')).href);
      const diagram = page.locator('pre.mermaid svg');
      await expect.poll(() => diagram.count(), { timeout: 30_000 }).toBe(1);
      // Drawn, not listed: no code block holds the diagram's source.
      expect(await page.locator('pre code', { hasText: 'subgraph engine' }).count()).toBe(0);
      expect(await page.locator('pre.mermaid').getAttribute('data-processed')).toBe('true');
      const nodes = await Promise.all(
        (await diagram.locator('g.node').all()).map(async (node) => ({
          text: words(await node.textContent()),
          box: (await node.boundingBox()) ?? { x: 0, y: 0, width: 0, height: 0 },
        })),
      );
      const labels = nodes.map((node) => node.text);
      for (const label of [
        'host app / stepwise CLI',
        'sequential: 1 at a time, stop at any failure, approval required',
        'dag: eager, concurrency N, critical rules',
        'agentic: dag policy + model loop for goal steps',
        'run lifecycle: start · resume · lease · cancel · run handle',
        'step kernel: validate · preconditions · approval · journal · execute · redact',
        'goal-step executor: the model loop',
        'tools: tools-node · tools-mcp · plugins',
        'journal',
        'stores: MemoryStore · SQLite · Postgres',
      ])
        expect(labels, label).toContain(label);
      expect(await diagram.locator('.cluster', { hasText: 'engine = a policy' }).count()).toBe(1);
      // Laid out at a readable size: every node has room, none covers another, the arrows are drawn.
      const area = (await diagram.boundingBox()) ?? { width: 0, height: 0 };
      expect(area.width).toBeGreaterThan(400);
      expect(area.height).toBeGreaterThan(400);
      for (const [index, { box, text }] of nodes.entries()) {
        expect(box.width, text).toBeGreaterThan(40);
        expect(box.height, text).toBeGreaterThan(20);
        for (const other of nodes.slice(index + 1)) {
          const apart =
            box.x + box.width <= other.box.x ||
            other.box.x + other.box.width <= box.x ||
            box.y + box.height <= other.box.y ||
            other.box.y + other.box.height <= box.y;
          expect(apart, `${text} / ${other.text}`).toBe(true);
        }
      }
      expect(await diagram.locator('.edgePaths path').count()).toBe(9);
      await diagram.screenshot({ path: screenshot, style: '.tsd-page-toolbar { visibility: hidden; }' });
      // Nothing left the machine: mermaid is the site's own copy.
      expect(requests.filter((url) => !url.startsWith('file:'))).toEqual([]);
      expect(requests.some((url) => url.endsWith('/assets/mermaid.min.js'))).toBe(true);
      expect(errors).toEqual([]);
    });
    expect(statSync(screenshot).size).toBeGreaterThan(20_000);
  });

  it.skipIf(!chromiumAvailable)(
    'lists every heading in "On this page" with its whole text, code included',
    async () => {
      const pages = ['index.html', ...['modules', 'documents'].flatMap((folder) => htmlFiles(folder))];
      const seen: string[] = [];
      await withChromiumPage({ width: 1280, height: 900 }, async (page) => {
        for (const file of pages) {
          await page.goto(pathToFileURL(path.join(SITE, file)).href);
          for (const { link, heading } of await pageHeadingLinks(page)) {
            expect(link, `${file}: a link with no text`).not.toBe('');
            expect(link, `${file}: the link to "${heading}"`).toBe(heading);
            seen.push(link);
          }
        }
      });
      // The headings the issue named, from the cli's and the core's README.
      for (const heading of [
        'stepwise run',
        'Durability: step or batched',
        'Waiting for a person: stepwise pending, stepwise respond',
      ])
        expect(seen).toContain(heading);
    },
  );

  it.skipIf(!chromiumAvailable)("shows the site's title once on its front page", async () => {
    await withChromiumPage({ width: 1280, height: 900 }, async (page) => {
      await page.goto(pathToFileURL(path.join(SITE, 'index.html')).href);
      const titles = page.locator('.col-content :is(h1, h2, h3)').filter({ hasText: /^\s*Stepwise\s*$/ });
      expect(await titles.count()).toBe(1);
      expect(await page.locator('.col-content h1').count()).toBe(1);
    });
  });
});

/** The site's pages in `folder`, relative to the site. */
function htmlFiles(folder: string): string[] {
  return readdirSync(path.join(SITE, folder))
    .filter((file) => file.endsWith('.html'))
    .map((file) => `${folder}/${file}`);
}

/**
 * The links of "On this page" to the page's Markdown headings (not those to its API members), each
 * with the text of the heading it points at (the permalink icon has none).
 */
async function pageHeadingLinks(page: Page): Promise<{ link: string; heading: string }[]> {
  // One round trip per page: a page lists hundreds of links, and asking for each one's text and
  // target separately took most of this test's time.
  const found = await page.$$eval(
    '.tsd-page-navigation .tsd-accordion-details > a, .tsd-page-navigation .tsd-accordion-details > ul a',
    (links) =>
      links.map((link) => {
        const id = decodeURIComponent(link.getAttribute('href')?.replace(/^#/, '') ?? '');
        const targets = link.ownerDocument.querySelectorAll(`[id="${id.replace(/["\\]/g, '\\$&')}"]`);
        return { link: link.textContent, heading: targets.length === 1 ? targets[0]?.textContent : undefined, id };
      }),
  );
  return found.map(({ link, heading, id }) => ({
    link: words(link),
    heading: heading === undefined ? `(${id}: no such heading)` : words(heading),
  }));
}

function words(text: string | null): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}

if (!chromiumAvailable) console.warn(skipMessage('documentation site screenshot'));
