import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeOpenAIServer } from '@stepwise/engine-agentic/testing';
import { describe, expect, it } from 'vitest';
import { assertBuilt, runCli } from './helpers.js';

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
