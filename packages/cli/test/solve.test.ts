import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeOpenAIServer } from '@stepwise/engine-agentic/testing';
import { describe, expect, it } from 'vitest';
import { assertBuilt, cliEnvironment, PACKAGE_DIRECTORY, runCli } from './helpers.js';

// `stepwise solve` and `stepwise plan` as a user runs them: the built binary, which loads
// @stepwise/code-agent on demand. The code agent itself is tested in packages/code-agent.
const example = fileURLToPath(new URL('../../../examples/code-agent/', import.meta.url));
const project = path.join(example, 'project');
const { scriptedFixer, PLAN } = (await import(path.join(example, 'scripted-fixer.mjs'))) as {
  scriptedFixer: (request: { body: unknown }) => unknown;
  PLAN: { id: string; goal: string; steps: { id: string; description: string }[] };
};

describe('stepwise solve', () => {
  it('solves through the configured endpoint, journals every run and exits 0', async () => {
    assertBuilt();
    const dir = mkdtempSync(path.join(tmpdir(), 'solve-cli-'));
    const server = await startFakeOpenAIServer({ replies: scriptedFixer as never });
    try {
      cpSync(project, dir, { recursive: true });
      writeFileSync(
        path.join(dir, 'stepwise.config.json'),
        JSON.stringify({ model: { baseURL: server.url, model: 'scripted-fixer' } }),
      );
      const outcome = await runCli(['solve', 'Make the tests pass', '--validate', 'node --test'], {
        cwd: dir,
        timeoutMs: 120_000,
      });
      expect(outcome.stdout).toMatch(
        /fix-discount attempt 1: step succeeded; changed src\/cart.js; node --test failed \(exit 1\); failing: .*half price; rolled back/,
      );
      expect(outcome.stdout).toMatch(
        /fix-discount attempt 2: step succeeded; changed src\/cart.js; node --test passed/,
      );
      expect(outcome.code).toBe(0);
      // One run: the code agent's, on the scheduler.
      const runs = await runCli(['runs', '--json'], { cwd: dir });
      expect(JSON.parse(runs.stdout) as unknown[]).toHaveLength(1);

      // The code agent's run shows every attempt with its validation and rollback.
      const runId = /run: (\S+) \(stepwise show/.exec(outcome.stdout)?.[1] as string;
      const shown = await runCli(['show', runId], { cwd: dir });
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(
        /fix-discount attempt 1 {2}step succeeded {2}node --test failed \(exit 1\), 2 failing/,
      );
      expect(shown.stdout).toMatch(/failing {2}\S*test\/cart\.test\.js: discounts > half price/);
      expect(shown.stdout).toContain('rolled back  restored src/cart.js');
      expect(shown.stdout).toMatch(/fix-discount attempt 2 {2}step succeeded {2}node --test passed/);
      const json = JSON.parse((await runCli(['show', runId, '--json'], { cwd: dir })).stdout) as {
        attempts: { attempt: number; rolledBack: boolean; validation: { exitCode: number } }[];
      };
      expect(json.attempts.map((entry) => [entry.attempt, entry.rolledBack, entry.validation.exitCode])).toEqual([
        [1, true, 1],
        [2, false, 0],
      ]);
      const reportPath = path.join(dir, 'report.html');
      expect((await runCli(['report', runId, '--out', reportPath], { cwd: dir })).code).toBe(0);
      const html = readFileSync(reportPath, 'utf8');
      expect(html).toContain('<section id="attempts-section">');
      expect(html).toContain('node --test failed (exit 1), 2 failing');
      expect(html).toContain('restored src/cart.js');
      expect(html).toContain('29.4 !== 15');

      const usage = await runCli(['solve', 'Make the tests pass'], { cwd: dir });
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('--validate');
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('stepwise plan, then stepwise solve --plan', () => {
  it('writes the plan solve would carry out, and solves from the file', async () => {
    assertBuilt();
    const dir = mkdtempSync(path.join(tmpdir(), 'plan-cli-'));
    const server = await startFakeOpenAIServer({ replies: scriptedFixer as never });
    try {
      cpSync(project, dir, { recursive: true });
      writeFileSync(
        path.join(dir, 'stepwise.config.json'),
        JSON.stringify({
          model: { baseURL: server.url, model: 'scripted-fixer' },
          validation: { test: { command: ['node', '--test'] } },
        }),
      );
      const planned = await runCli(['plan', 'Make the tests pass', '--out', 'plan.json'], { cwd: dir });
      expect(planned.stderr).toBe('');
      expect(planned.code).toBe(0);
      const plan = JSON.parse(readFileSync(path.join(dir, 'plan.json'), 'utf8')) as typeof PLAN;
      expect(plan.steps.map((step) => step.id)).toEqual(['fix-discount']);
      // Nothing ran: the workspace is untouched and the journal holds no run.
      expect(readFileSync(path.join(dir, 'src/cart.js'), 'utf8')).toContain('return total - percent;');
      const solved = await runCli(['solve', 'Make the tests pass', '--plan', 'plan.json'], {
        cwd: dir,
        timeoutMs: 120_000,
      });
      expect(solved.code).toBe(0);
      expect(solved.stdout).toContain('plan: fix-discount');
      expect(solved.stdout).toMatch(/fix-discount attempt 2: step succeeded; changed src\/cart.js; node --test passed/);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

/**
 * An install where `@stepwise/engine-agentic` is not where the cli can import it: under
 * `@stepwise/code-agent`, whose dependency it is (as pnpm lays packages out, or npm when versions
 * differ). The built packages are copied; other dependencies are links to the repository's.
 */
function installWithoutHoisting(root: string): string {
  const repository = path.resolve(PACKAGE_DIRECTORY, '..', '..');
  const modules = path.join(root, 'node_modules');
  mkdirSync(path.join(modules, '@stepwise'), { recursive: true });
  for (const name of readdirSync(path.join(repository, 'node_modules'))) {
    if (name !== '@stepwise' && !name.startsWith('.')) {
      symlinkSync(path.join(repository, 'node_modules', name), path.join(modules, name));
    }
  }
  const copy = (name: string, into: string) => {
    const from = path.join(repository, 'packages', name);
    cpSync(path.join(from, 'package.json'), path.join(into, '@stepwise', name, 'package.json'));
    cpSync(path.join(from, 'dist'), path.join(into, '@stepwise', name, 'dist'), { recursive: true });
  };
  for (const name of ['cli', 'core', 'dashboard', 'engine-dag', 'store-sqlite', 'tools-node', 'code-agent']) {
    copy(name, modules);
  }
  copy('engine-agentic', path.join(modules, '@stepwise', 'code-agent', 'node_modules'));
  return path.join(modules, '@stepwise', 'cli', 'dist', 'bin.js');
}

function runBin(bin: string, args: readonly string[], cwd: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd, env: cliEnvironment(), stdio: 'pipe' });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

describe('stepwise plan and solve where only the code agent can import @stepwise/engine-agentic', () => {
  it("build the endpoint's model with the code agent's own dependency", async () => {
    assertBuilt();
    const root = mkdtempSync(path.join(tmpdir(), 'solve-nested-'));
    const server = await startFakeOpenAIServer({ replies: scriptedFixer as never });
    try {
      const bin = installWithoutHoisting(path.join(root, 'install'));
      const fromCli = createRequire(bin);
      expect(() => fromCli.resolve('@stepwise/engine-agentic')).toThrow();
      expect(fromCli.resolve('@stepwise/code-agent')).toContain(path.join(root, 'install'));
      const dir = path.join(root, 'project');
      cpSync(project, dir, { recursive: true });
      writeFileSync(
        path.join(dir, 'stepwise.config.json'),
        JSON.stringify({ model: { baseURL: server.url, model: 'scripted-fixer' } }),
      );
      const planned = await runBin(bin, ['plan', 'Make the tests pass', '--validate', 'node --test'], dir);
      expect(planned.stderr).toBe('');
      expect(planned.code).toBe(0);
      const solved = await runBin(
        bin,
        ['solve', 'Make the tests pass', '--plan', 'plan.json', '--validate', 'node --test'],
        dir,
      );
      expect(solved.stderr).toBe('');
      expect(solved.stdout).toMatch(/fix-discount attempt 2: step succeeded; changed src\/cart.js; node --test passed/);
      expect(solved.code).toBe(0);
    } finally {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    }
  }, 180_000);
});
