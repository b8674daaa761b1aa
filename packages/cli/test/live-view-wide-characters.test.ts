import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';
import { stripAnsi, textWidth } from '../src/terminal.js';
import { ARTIFACTS, assertBuilt, BIN, createWorkspace, FIXTURES } from './helpers.js';
import { terminalCaptureHtml } from './terminal-capture-html.js';
import { TmuxServer, tmuxAvailable, waitForExitFile } from './tmux-terminal.js';

// The live view in a real pseudo-terminal of 60×20 whose plan has a goal of double-width
// characters (with a combining mark and an emoji sequence): every redraw must move back over
// exactly the rows the last frame took, so nothing of an earlier frame stays on the screen.

const SIZE = { columns: 60, rows: 20 } as const;
const GOAL = 'cafe\u0301 👨‍👩‍👧‍👦 日本語のゴール：計画を読んで変更を加え、テストを実行して結果を確かめる。';
const HEADER = 'stepwise · 計画 · dag engine';

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let workspace: Workspace;
const terminal = new TmuxServer('wide');

beforeAll(async () => {
  if (!tmuxAvailable) return;
  assertBuilt();
  workspace = await createWorkspace({});
  await workspace.write('stepwise.config.json', { plugins: [{ module: path.join(FIXTURES, 'test-plugin.mjs') }] });
  // About two seconds of steps: some 25 frames, each of which used to leave a row behind.
  await workspace.write('plan.json', {
    id: '計画',
    goal: GOAL,
    steps: [
      { id: 'read', tool: 'sleep_ms', args: { ms: 600 } },
      { id: 'think', tool: 'sleep_ms', args: { ms: 1200 }, dependsOn: ['read'] },
      { id: 'write', tool: 'sleep_ms', args: { ms: 300 }, dependsOn: ['think'] },
    ],
  });
});

afterAll(async () => {
  if (!tmuxAvailable) return;
  terminal.close();
  await workspace?.dispose();
});

/** The rows of the pane and its scrollback as the terminal shows them (wrapped rows not joined). */
function rows(capture: string): string[] {
  return capture
    .replace(/\n+$/, '')
    .split('\n')
    .map((row) => row.normalize('NFC'));
}

/** The goal's row; tmux 3.3 keeps only the first three emoji of the four joined ones, so not matched on. */
function isGoalRow(row: string): boolean {
  return row.startsWith('café ') && row.includes('日本語のゴール');
}

describe.skipIf(!tmuxAvailable)('the live view with wide characters in a 60×20 terminal (tmux)', () => {
  let capture = '';
  let coloured = '';

  beforeAll(async () => {
    if (!tmuxAvailable) return;
    const exitFile = path.join(workspace.directory, 'wide.exit');
    // Colours on (a terminal, no NO_COLOR): the escapes must not count as columns either.
    const command = `cd '${workspace.directory}' && env -u NO_COLOR -u FORCE_COLOR '${process.execPath}' '${BIN}' run plan.json; echo EXIT:$? > '${exitFile}'; sleep 60`;
    terminal.start('wide', SIZE, command);
    expect(await waitForExitFile(exitFile)).toBe(0);
    capture = terminal.screen('wide', { join: false });
    coloured = terminal.screen('wide', { join: false, escapes: true });
    await mkdir(ARTIFACTS, { recursive: true });
    await writeFile(path.join(ARTIFACTS, 'live-view-cjk.txt'), capture);
    await writeFile(path.join(ARTIFACTS, 'live-view-cjk.ansi.txt'), coloured);
  }, 60_000);

  it('leaves no stale lines: the header, the goal and each step are on the screen once', () => {
    const screen = rows(capture);
    expect(
      screen.filter((row) => row.startsWith(HEADER)),
      capture,
    ).toHaveLength(1);
    expect(screen.filter(isGoalRow), capture).toHaveLength(1);
    for (const step of ['read', 'think', 'write']) {
      expect(
        screen.filter((row) => row.includes(` ${step} `)),
        capture,
      ).toHaveLength(1);
      expect(screen.some((row) => new RegExp(`^ {2}✓ ${step}\\s+sleep_ms\\s+\\d`).test(row))).toBe(true);
    }
    expect(
      screen.filter((row) => /\d\/3 steps/.test(row)),
      capture,
    ).toHaveLength(1);
    expect(capture).toMatch(/3\/3 steps · [\d.]+s · completed/);
  });

  it('cuts the goal to the width of the terminal, by columns, with an ellipsis', () => {
    const goal = rows(capture).find(isGoalRow) ?? '';
    expect(goal.endsWith('…')).toBe(true);
    expect(textWidth(goal)).toBeLessThanOrEqual(SIZE.columns - 1);
    expect(textWidth(goal)).toBeGreaterThanOrEqual(SIZE.columns - 3);
    // In colour, the same rows: the escapes took no column.
    expect(coloured).toContain('\u001b[1mstepwise');
    expect(rows(stripAnsi(coloured))).toEqual(rows(capture));
  });

  it.skipIf(!chromiumAvailable)('draws the final screen as a picture (headless Chromium)', async () => {
    const page = path.join(ARTIFACTS, 'live-view-cjk.html');
    await writeFile(page, terminalCaptureHtml(coloured, SIZE));
    await withChromiumPage({ width: 800, height: 600 }, async (browser) => {
      await browser.goto(pathToFileURL(page).href);
      const shown = await browser.locator('.row').allTextContents();
      expect(shown).toHaveLength(SIZE.rows);
      expect(shown.filter((row) => row.startsWith(HEADER))).toHaveLength(1);
      expect(shown.map((row) => row.normalize('NFC')).filter(isGoalRow)).toHaveLength(1);
      await browser.locator('#terminal').screenshot({ path: path.join(ARTIFACTS, 'live-view-cjk.png') });
    });
  });
});

if (!chromiumAvailable) console.warn(skipMessage('the picture of the live view'));
