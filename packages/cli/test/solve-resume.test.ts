import { type ChildProcess, execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FakeRequest, startFakeOpenAIServer } from '@stepwise/engine-agentic/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { assertBuilt, runCli, startCli } from './helpers.js';

const example = fileURLToPath(new URL('../../../examples/code-agent/', import.meta.url));
const { scriptedFixer } = (await import(path.join(example, 'scripted-fixer.mjs'))) as {
  scriptedFixer: (request: { body: unknown }) => unknown;
};

const BUGGY = 'return total - percent;';
const WRONG = 'return total - total / percent;';

type Body = { messages?: { role: string; content?: string }[]; tools?: { function?: { name?: string } }[] };

/** Every file under `root` but `.git` and `.stepwise`, with its exact bytes. */
function files(root: string, relative = ''): Record<string, string> {
  const found: Record<string, string> = {};
  for (const name of readdirSync(path.join(root, relative)).sort()) {
    if (relative === '' && (name === '.git' || name === '.stepwise')) continue;
    const child = relative ? `${relative}/${name}` : name;
    if (statSync(path.join(root, child)).isDirectory()) Object.assign(found, files(root, child));
    else found[child] = readFileSync(path.join(root, child)).toString('base64');
  }
  return found;
}

/** The example's project in a git repository, with ignored build output and a log. */
function gitProject(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'solve-resume-'));
  cpSync(path.join(example, 'project'), dir, { recursive: true });
  writeFileSync(path.join(dir, '.gitignore'), '.stepwise/\nbuild/\n*.log\n');
  mkdirSync(path.join(dir, 'build'));
  writeFileSync(path.join(dir, 'build/config.json'), '{"mode":"release"}\n');
  writeFileSync(path.join(dir, 'app.log'), 'started\n');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q');
  git('add', '.');
  git('-c', 'user.name=test', '-c', 'user.email=test@example.com', 'commit', '-qm', 'project');
  return dir;
}

const turnOf = (body: Body) => (body.messages ?? []).filter((message) => message.role === 'assistant').length;
const openingOf = (body: Body) => body.messages?.find((message) => message.role === 'user')?.content ?? '';
const isPlanner = (body: Body) => (body.tools ?? []).some((tool) => tool.function?.name === 'submit_plan');

/** Waits for a condition the test's server or child sets. */
function signal() {
  let fire: () => void = () => undefined;
  const fired = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { fire, fired };
}

function exited(child: ChildProcess): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => child.on('exit', (_code, killedBy) => resolve(killedBy)));
}

/** Kills the child with SIGKILL once the kill point is reached; fails with its output if it ends first. */
async function killAt(child: ChildProcess, killPoint: Promise<void>): Promise<NodeJS.Signals | null> {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exit = exited(child);
  const first = await Promise.race([killPoint.then(() => 'kill' as const), exit.then(() => 'exit' as const)]);
  if (first === 'exit') throw new Error(`stepwise solve ended before the kill point:\n${output}`);
  child.kill('SIGKILL');
  return exit;
}

/**
 * The configuration of these tests: the fake endpoint, a short lease, `node --test` as the validation.
 * 6 s, not less: a process starved for longer than its TTL on a loaded machine loses its run (E501).
 */
function configure(dir: string, url: string, extra: Record<string, unknown> = {}): void {
  writeFileSync(
    path.join(dir, 'stepwise.config.json'),
    JSON.stringify({
      model: { baseURL: url, model: 'scripted' },
      leaseTtlMs: 6_000,
      validation: { test: ['node', '--test'] },
      ...extra,
    }),
  );
}

/** The id of the one run in the workspace's journal. */
async function onlyRunId(dir: string): Promise<string> {
  const runs = JSON.parse((await runCli(['runs', '--json'], { cwd: dir })).stdout) as { runId: string }[];
  expect(runs).toHaveLength(1);
  return runs[0]?.runId as string;
}

describe('stepwise solve, killed with SIGKILL during attempt 2, then stepwise resume', () => {
  const scratch: string[] = [];
  afterEach(() => {
    for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('validates the attempt as the crash left it, keeps it when it passes, and ends with a clean workspace', async () => {
    assertBuilt();
    const dir = gitProject();
    scratch.push(dir);
    const killPoint = signal();
    const server = await startFakeOpenAIServer({
      replies: async (request: FakeRequest) => {
        const body = request.body as Body;
        // Attempt 2 made the right edit; its next model call is where the process dies.
        if (!isPlanner(body) && openingOf(body).includes('failed and was rolled back') && turnOf(body) === 2) {
          killPoint.fire();
          await new Promise((resolve) => setTimeout(resolve, 5_000));
        }
        return scriptedFixer({ body }) as never;
      },
    });
    try {
      configure(dir, server.url);
      const child = startCli(['solve', 'Make the tests pass'], { cwd: dir });
      expect(await killAt(child, killPoint.fired)).toBe('SIGKILL');
      // The crash left attempt 2's edit unvalidated, and its checkpoint on disk.
      expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('(1 - percent / 100)');
      const runs = JSON.parse((await runCli(['runs', '--json'], { cwd: dir })).stdout) as {
        runId: string;
        status: string;
        engine: string;
      }[];
      expect(runs).toHaveLength(1);
      const [{ runId, status, engine }] = runs as [(typeof runs)[number]];
      expect({ status, engine }).toEqual({ status: 'running', engine: 'solve' });
      expect(readdirSync(path.join(dir, '.stepwise/checkpoints', runId))).toEqual(['fix-discount.2']);

      const resumed = await runCli(['resume', runId], { cwd: dir, timeoutMs: 120_000 });
      expect(resumed.stderr).not.toContain('Error');
      expect(resumed.code).toBe(0);
      expect(resumed.stdout).toMatch(
        /fix-discount attempt 2: step succeeded; changed src\/cart.js; node --test passed/,
      );

      const shown = JSON.parse((await runCli(['show', runId, '--json'], { cwd: dir })).stdout) as {
        run: { status: string };
        attempts: { attempt: number; rolledBack: boolean; validation: { exitCode: number } }[];
      };
      expect(shown.run.status).toBe('completed');
      // Two validations journaled, one per attempt: the failed first one and the resumed second one.
      expect(shown.attempts.map((entry) => [entry.attempt, entry.rolledBack, entry.validation.exitCode])).toEqual([
        [1, true, 1],
        [2, false, 0],
      ]);
      // Clean: only the fix is left, the checkpoints are gone.
      const changed = execFileSync('git', ['status', '--porcelain'], { cwd: dir, encoding: 'utf8' });
      expect(changed.trimEnd().split('\n')).toEqual([' M src/cart.js', '?? stepwise.config.json']);
      expect(existsSync(path.join(dir, '.stepwise/checkpoints', runId))).toBe(false);
    } finally {
      await server.close();
    }
  }, 180_000);

  it('rolls back a failed attempt after the crash, ignored and new files included, byte for byte', async () => {
    assertBuilt();
    const dir = gitProject();
    scratch.push(dir);
    const original = files(dir);
    const killPoint = signal();
    const call = (...calls: { name: string; arguments: Record<string, unknown> }[]) => ({ toolCalls: calls });
    const server = await startFakeOpenAIServer({
      replies: async (request: FakeRequest) => {
        const body = request.body as Body;
        if (isPlanner(body)) return scriptedFixer({ body }) as never;
        const second = openingOf(body).includes('failed and was rolled back');
        const turn = turnOf(body);
        if (turn === 0) {
          return call({
            name: 'file_edit',
            arguments: { path: 'src/cart.js', edits: [{ search: BUGGY, replace: WRONG }] },
          });
        }
        if (turn === 1) {
          return call(
            {
              name: 'file_edit',
              arguments: { path: 'build/config.json', edits: [{ search: 'release', replace: 'debug' }] },
            },
            {
              name: 'file_edit',
              arguments: { path: 'app.log', edits: [{ search: 'started\n', replace: 'started\nedited\n' }] },
            },
            { name: 'file_create', arguments: { path: 'build/extra.bin', contents: 'new' } },
          );
        }
        if (second) {
          killPoint.fire();
          await new Promise((resolve) => setTimeout(resolve, 5_000));
        }
        return call({ name: 'complete_step', arguments: { summary: 'done' } });
      },
    });
    try {
      configure(dir, server.url, { solve: { maxAttempts: 2, maxReplans: 0 } });
      const withConfig = { ...original, 'stepwise.config.json': expect.any(String) };
      const child = startCli(['solve', 'Make the tests pass'], { cwd: dir });
      expect(await killAt(child, killPoint.fired)).toBe('SIGKILL');
      // Attempt 2 left its changes behind, ignored files included.
      expect(readFileSync(path.join(dir, 'build/config.json'), 'utf8')).toContain('debug');
      expect(existsSync(path.join(dir, 'build/extra.bin'))).toBe(true);

      const runId = await onlyRunId(dir);
      const resumed = await runCli(['resume', runId], { cwd: dir, timeoutMs: 120_000 });
      expect(resumed.stdout).toMatch(
        /fix-discount attempt 2: step succeeded; .*node --test failed \(exit 1\).*; rolled back/,
      );
      expect(resumed.stdout).toContain('build/extra.bin');
      expect(resumed.code).toBe(30);
      // Everything the attempt changed is back, byte for byte.
      expect(files(dir)).toEqual(withConfig);

      const shown = JSON.parse((await runCli(['show', runId, '--json'], { cwd: dir })).stdout) as {
        attempts: { attempt: number; rolledBack: boolean; rollback?: { restored: string[]; removed: string[] } }[];
      };
      expect(shown.attempts.map((entry) => [entry.attempt, entry.rolledBack])).toEqual([
        [1, true],
        [2, true],
      ]);
      expect(shown.attempts[1]?.rollback, JSON.stringify(shown.attempts[1]?.rollback)).toMatchObject({
        restored: ['app.log', 'build/config.json', 'src/cart.js'],
        removed: ['build/extra.bin'],
      });
    } finally {
      await server.close();
    }
  }, 180_000);

  it('plans again when the process died while planning, then solves', async () => {
    assertBuilt();
    const dir = gitProject();
    scratch.push(dir);
    const killPoint = signal();
    let planned = 0;
    const server = await startFakeOpenAIServer({
      replies: async (request: FakeRequest) => {
        const body = request.body as Body;
        if (isPlanner(body) && planned++ === 0) {
          killPoint.fire();
          await new Promise((resolve) => setTimeout(resolve, 5_000));
        }
        return scriptedFixer({ body }) as never;
      },
    });
    try {
      configure(dir, server.url);
      const child = startCli(['solve', 'Make the tests pass'], { cwd: dir });
      expect(await killAt(child, killPoint.fired)).toBe('SIGKILL');
      const runId = await onlyRunId(dir);
      const resumed = await runCli(['resume', runId], { cwd: dir, timeoutMs: 120_000 });
      expect(resumed.code).toBe(0);
      expect(resumed.stdout).toContain('plan: fix-discount');
      expect(resumed.stdout).toMatch(
        /fix-discount attempt 2: step succeeded; changed src\/cart.js; node --test passed/,
      );
      expect(planned).toBe(2);
    } finally {
      await server.close();
    }
  }, 180_000);

  it('validates again when the process died during the validation, then rolls back and retries', async () => {
    assertBuilt();
    const dir = gitProject();
    scratch.push(dir);
    // A slow test that says when the validation runs (node_modules is never part of a checkpoint).
    writeFileSync(
      path.join(dir, 'test/slow.test.js'),
      [
        "import { mkdirSync, writeFileSync } from 'node:fs';",
        "import test from 'node:test';",
        "test('slow', async () => {",
        "  mkdirSync('node_modules', { recursive: true });",
        "  writeFileSync('node_modules/.validating', 'yes');",
        '  await new Promise((resolve) => setTimeout(resolve, 3000));',
        '});',
        '',
      ].join('\n'),
    );
    const server = await startFakeOpenAIServer({ replies: scriptedFixer as never });
    try {
      configure(dir, server.url);
      const marker = path.join(dir, 'node_modules/.validating');
      const validating = (async () => {
        while (!existsSync(marker)) await new Promise((resolve) => setTimeout(resolve, 20));
      })();
      const child = startCli(['solve', 'Make the tests pass'], { cwd: dir });
      expect(await killAt(child, validating)).toBe('SIGKILL');
      // Killed during attempt 1's validation: its wrong edit is still there.
      expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('total - total / percent');
      const runId = await onlyRunId(dir);
      const resumed = await runCli(['resume', runId], { cwd: dir, timeoutMs: 120_000 });
      expect(resumed.code).toBe(0);
      expect(resumed.stdout).toMatch(
        /fix-discount attempt 1: step succeeded; .*node --test failed \(exit 1\).*rolled back/,
      );
      expect(resumed.stdout).toMatch(
        /fix-discount attempt 2: step succeeded; changed src\/cart.js; node --test passed/,
      );
      const shown = JSON.parse((await runCli(['show', runId, '--json'], { cwd: dir })).stdout) as {
        attempts: { attempt: number; rolledBack: boolean; validation: { exitCode: number } }[];
      };
      expect(shown.attempts.map((entry) => [entry.attempt, entry.rolledBack, entry.validation.exitCode])).toEqual([
        [1, true, 1],
        [2, false, 0],
      ]);
    } finally {
      await server.close();
    }
  }, 180_000);
});
