import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MemoryStore } from '@stepwise/core';
import { callTool, RunJournal } from '@stepwise/core/engine';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { childEnvironment } from '../src/index.js';
import { createHarness, type Harness, isAlive } from './helpers.js';

let harness: Harness;

beforeAll(async () => {
  process.env.STEPWISE_TEST_HOST_TOKEN = 'sk-host-token-never-inherited-1234567890';
  process.env.STEPWISE_TEST_API_KEY = 'value-of-an-allowed-api-key';
  harness = await createHarness({
    commands: {
      allow: ['node', 'definitely-not-a-program-here'],
      env: { allow: ['STEPWISE_TEST_API_KEY', 'STEPWISE_PLAN_*'] },
      killGraceMs: 500,
      // These tests follow host pids through the process-group kill that works without the OS
      // sandbox; os-sandbox.test.ts covers the same kills inside it (its own pid namespace).
      sandbox: 'off',
    },
  });
  const write = (name: string, text: string) => writeFile(path.join(harness.workspace, name), text);
  await write(
    'tree.js',
    `const { spawn } = require('node:child_process');
const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
console.log(JSON.stringify({ parent: process.pid, child: child.pid }));
if (process.argv[3]) require('node:fs').writeFileSync(process.argv[3], JSON.stringify({ parent: process.pid, child: child.pid }));
if (process.argv[2] === 'exit') child.unref();
else setTimeout(() => {}, 60000);
`,
  );
  await write('fail.js', "console.log('some output'); console.error('first\\nthe real problem'); process.exit(3);\n");
  await write('suicide.js', "process.kill(process.pid, 'SIGKILL');\n");
  await write(
    'flood.js',
    "const line = 'x'.repeat(1023) + '\\n'; process.stdout.write('BEGIN'); for (let i = 0; i < 3072; i++) process.stdout.write(line); process.stdout.write('END');\n",
  );
  await write('env.js', 'console.log(JSON.stringify(process.env));\n');
  await write(
    'echo-stdin.js',
    "let s = ''; process.stdin.on('data', (c) => (s += c)); process.stdin.on('end', () => console.log(s.toUpperCase()));\n",
  );
  await write(
    'term-ignorer.js',
    "process.on('SIGTERM', () => {}); console.log(process.pid); setInterval(() => {}, 1000);\n",
  );
});

afterAll(async () => {
  delete process.env.STEPWISE_TEST_HOST_TOKEN;
  delete process.env.STEPWISE_TEST_API_KEY;
  await harness.cleanup();
});

async function waitGone(pids: number[]): Promise<void> {
  await vi.waitFor(
    async () => {
      for (const pid of pids) expect(await isAlive(pid)).toBe(false);
    },
    { timeout: 8000, interval: 100 },
  );
}

describe('run_command processes', () => {
  it('kills the whole tree on timeout, grandchild included', async () => {
    const outcome = await harness.call('run_command', { command: ['node', 'tree.js'], timeoutMs: 1500 });
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('E306');
    const stdout = String(outcome.error?.details?.stdout);
    const pids = JSON.parse(stdout) as { parent: number; child: number };
    expect(pids.child).toBeGreaterThan(0);
    await waitGone([pids.parent, pids.child]);
  }, 20_000);

  it('kills what the command left behind when it exits', async () => {
    const outcome = await harness.call('run_command', { command: ['node', 'tree.js', 'exit'] });
    expect(outcome.status).toBe('succeeded');
    const pids = JSON.parse((outcome.output as { stdout: string }).stdout) as { parent: number; child: number };
    await waitGone([pids.child]);
  }, 20_000);

  it('escalates to SIGKILL when SIGTERM is ignored', async () => {
    const started = performance.now();
    const outcome = await harness.call('run_command', { command: ['node', 'term-ignorer.js'], timeoutMs: 800 });
    expect(outcome.error?.code).toBe('E306');
    const pid = Number(String(outcome.error?.details?.stdout).trim());
    await waitGone([pid]);
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 20_000);

  it('fails a non-zero exit with E304, exit code, output and artifacts', async () => {
    const outcome = await harness.call('run_command', { command: ['node', 'fail.js'] });
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('E304');
    expect(outcome.error?.message).toContain('exited with code 3');
    expect(outcome.error?.message).toContain('the real problem');
    expect(outcome.error?.details).toMatchObject({ exitCode: 3, signal: null });
    expect(outcome.error?.details?.stdout).toContain('some output');
    expect(outcome.error?.details?.stderr).toContain('the real problem');
    const kinds = outcome.artifacts.map((artifact) => artifact.kind).sort();
    expect(kinds).toEqual(['stderr', 'stdout']);
    expect(outcome.artifacts.find((artifact) => artifact.kind === 'stderr')?.content).toContain('the real problem');
  });

  it('reports the signal that killed a command', async () => {
    const outcome = await harness.call('run_command', { command: ['node', 'suicide.js'] });
    expect(outcome.error?.code).toBe('E304');
    expect(outcome.error?.details).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  });

  it('reports exit code 0 and output on success', async () => {
    const outcome = await harness.call('run_command', { command: ['node', 'echo-stdin.js'], stdin: 'shout this' });
    expect(outcome.output).toMatchObject({ exitCode: 0, signal: null, stdout: 'SHOUT THIS\n', stdoutTruncated: false });
  });

  it('caps output keeping head and tail with a truncation marker', async () => {
    const capped = await createHarness({ commands: { allow: ['node'], maxOutputBytes: 64 * 1024 } });
    try {
      await writeFile(
        path.join(capped.workspace, 'flood.js'),
        "const line = 'x'.repeat(1023) + '\\n'; process.stdout.write('BEGIN'); for (let i = 0; i < 3072; i++) process.stdout.write(line); process.stdout.write('END');\n",
      );
      const outcome = await capped.call('run_command', { command: ['node', 'flood.js'] });
      const output = outcome.output as { stdout: string; stdoutTruncated: boolean };
      expect(output.stdoutTruncated).toBe(true);
      expect(output.stdout.startsWith('BEGIN')).toBe(true);
      expect(output.stdout.endsWith('END')).toBe(true);
      expect(output.stdout).toMatch(/\[… \d+ bytes truncated …\]/);
      expect(output.stdout.length).toBeLessThan(70 * 1024);
      expect(outcome.artifacts.find((artifact) => artifact.kind === 'stdout')?.truncated).toBe(true);
    } finally {
      await capped.cleanup();
    }
  });

  it('builds the environment from the allowlist and scrubs secret-named values', async () => {
    const outcome = await harness.call('run_command', {
      command: ['node', 'env.js'],
      env: { STEPWISE_PLAN_COLOR: 'blue' },
    });
    const stdout = (outcome.output as { stdout: string }).stdout;
    expect(stdout).not.toContain('sk-host-token-never-inherited');
    expect(stdout).not.toContain('STEPWISE_TEST_HOST_TOKEN');
    expect(stdout).toContain('"STEPWISE_TEST_API_KEY":"[REDACTED]"');
    expect(stdout).not.toContain('value-of-an-allowed-api-key');
    expect(stdout).toContain('"STEPWISE_PLAN_COLOR":"blue"');
    expect(stdout).toContain('"GIT_TERMINAL_PROMPT":"0"');
    expect(stdout).toContain('"PATH"');
  });

  it('hardens git children through GIT_CONFIG_COUNT', () => {
    const { env } = childEnvironment({ executable: 'git', source: {} });
    expect(env.GIT_CONFIG_COUNT).toBe('3');
    expect(env.GIT_CONFIG_KEY_0).toBe('safe.bareRepository');
    expect(childEnvironment({ executable: 'node', source: {} }).env.GIT_CONFIG_COUNT).toBeUndefined();
  });

  it('says when an allowed executable is not installed', async () => {
    const outcome = await harness.call('run_command', { command: ['definitely-not-a-program-here'] });
    expect(outcome.error?.code).toBe('E303');
    expect(outcome.error?.message).toContain('not found on PATH');
  });

  it('refuses a cwd that is a file', async () => {
    const outcome = await harness.call('run_command', { command: ['node', 'fail.js'], cwd: 'fail.js' });
    expect(outcome.error?.code).toBe('E301');
  });

  it('stops the tree when the run is cancelled', async () => {
    const controller = new AbortController();
    const journal = new RunJournal({ runId: 'run_cancel', store: new MemoryStore() });
    const pending = callTool(
      {
        stepId: 'cancel',
        tool: 'run_command',
        args: { command: ['node', 'tree.js', 'stay', 'cancel-pids.json'] },
        attempt: 1,
        executionId: 'x1',
      },
      {
        runId: 'run_cancel',
        journal,
        registry: harness.registry,
        workspace: harness.workspace,
        signal: controller.signal,
        approvals: { policy: { effects: { exec: 'auto' } } },
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 700));
    controller.abort(new Error('user pressed stop'));
    const outcome = await pending;
    expect(outcome.status).toBe('cancelled');
    // The kernel returns at once; the tool keeps going until the tree is dead.
    const { readFile } = await import('node:fs/promises');
    const pids = JSON.parse(await readFile(path.join(harness.workspace, 'cancel-pids.json'), 'utf8')) as {
      parent: number;
      child: number;
    };
    await waitGone([pids.parent, pids.child]);
  }, 20_000);
});
