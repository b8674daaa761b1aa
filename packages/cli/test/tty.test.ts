import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, createWorkspace, FIXTURES } from './helpers.js';
import { TmuxServer, tmuxAvailable, waitForExitFile } from './tmux-terminal.js';

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let workspace: Workspace;
const terminal = new TmuxServer('tty');

/** Starts `stepwise run` in a fresh 120×40 pseudo-terminal; the shell records the exit code. */
function startInTerminal(session: string, args: string): string {
  const exitFile = path.join(workspace.directory, `${session}.exit`);
  const command = `cd '${workspace.directory}' && NO_COLOR=1 '${process.execPath}' '${BIN}' ${args}; echo EXIT:$? > '${exitFile}'; sleep 60`;
  terminal.start(session, { columns: 120, rows: 40 }, command);
  return exitFile;
}

beforeAll(async () => {
  if (!tmuxAvailable) return;
  assertBuilt();
  workspace = await createWorkspace({
    'src/math.js': 'export function add(a, b) {\n  return a + b;\n}\n',
  });
  await workspace.write('stepwise.config.json', {
    plugins: [{ module: path.join(FIXTURES, 'test-plugin.mjs') }],
  });
  await workspace.write('plan.json', {
    id: 'tty',
    goal: 'Fix add() while someone watches',
    steps: [
      { id: 'read', tool: 'file_read', args: { path: 'src/math.js' } },
      { id: 'think', tool: 'sleep_ms', args: { ms: 2000 }, dependsOn: ['read'] },
      {
        id: 'edit',
        tool: 'file_edit',
        requiresApproval: true,
        dependsOn: ['think'],
        args: { path: 'src/math.js', edits: [{ search: 'return a + b;', replace: 'return Number(a) + Number(b);' }] },
      },
      { id: 'after', tool: 'sleep_ms', args: { ms: 1 }, dependsOn: ['edit'] },
    ],
  });
});

afterAll(async () => {
  if (!tmuxAvailable) return;
  terminal.close();
  await workspace?.dispose();
});

describe.skipIf(!tmuxAvailable)('stepwise run in a terminal (tmux)', () => {
  it('shows the live view, asks for approval with a diff, and applies the change when approved', async () => {
    const exitFile = startInTerminal('approve', 'run plan.json');
    const live = await terminal.waitForScreen(
      'approve',
      (text) => /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] think\s+sleep_ms\s+\d/.test(text),
      'the spinner on the running step',
    );
    expect(live).toContain('stepwise · tty · dag engine');
    expect(live).toMatch(/✓ read\s+file_read/);
    expect(live).toMatch(/1\/4 steps · 1 running · /);
    expect(live).toMatch(/· edit\s+file_edit/);

    const prompt = await terminal.waitForScreen(
      'approve',
      (text) => text.includes('[a]pprove [d]eny [v]iew [s]kip'),
      'the prompt',
    );
    expect(prompt).toContain('Approval needed: step edit wants file_edit (write)');
    expect(prompt).toContain('--- a/src/math.js');
    expect(prompt).toContain('-  return a + b;');
    expect(prompt).toContain('+  return Number(a) + Number(b);');
    // The file is untouched while the question is open.
    expect(await readFile(path.join(workspace.directory, 'src/math.js'), 'utf8')).toContain('return a + b;');

    terminal.command('send-keys', '-t', 'approve', 'v');
    await terminal.waitForScreen('approve', (text) => text.includes('"search": "return a + b;"'), 'the full view');
    terminal.command('send-keys', '-t', 'approve', 'a');
    expect(await waitForExitFile(exitFile)).toBe(0);
    const done = terminal.screen('approve');
    expect(done).toContain('approved');
    expect(done).toMatch(/✓ completed in [\d.]+m?s — 4 succeeded/);
    expect(done).toMatch(/4\/4 steps/);
    expect(await readFile(path.join(workspace.directory, 'src/math.js'), 'utf8')).toContain('Number(a) + Number(b)');
  }, 60_000);

  it('denies at the prompt: the step is denied, its dependents skipped, exit 33', async () => {
    await workspace.write('src/math.js', 'export function add(a, b) {\n  return a + b;\n}\n');
    const exitFile = startInTerminal('deny', 'run plan.json');
    await terminal.waitForScreen('deny', (text) => text.includes('[a]pprove [d]eny [v]iew [s]kip'), 'the prompt');
    terminal.command('send-keys', '-t', 'deny', 'd');
    expect(await waitForExitFile(exitFile)).toBe(33);
    const done = terminal.screen('deny');
    expect(done).toMatch(/⊘ edit\s+file_edit/);
    expect(done).toMatch(/↷ after\s+sleep_ms/);
    expect(done).toContain('(exit 33)');
    expect(await readFile(path.join(workspace.directory, 'src/math.js'), 'utf8')).toContain('return a + b;');
    expect(existsSync(path.join(workspace.directory, '.stepwise', 'stepwise.db'))).toBe(true);
  }, 60_000);
});
