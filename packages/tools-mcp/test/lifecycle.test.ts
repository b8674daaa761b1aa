import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type McpPlugin, mcpTools } from '../src/index.js';
import { fixture, fixtureServer, isAlive, runWithKernel, temporaryDirectory, waitFor } from './helpers.js';

const run = promisify(execFile);

let directory: { path: string; remove: () => Promise<void> };
const plugins: McpPlugin[] = [];

async function load(name: string, options: Parameters<typeof fixtureServer>[1] = {}) {
  const plugin = await mcpTools(fixtureServer(name, options));
  plugins.push(plugin);
  const registry = new ToolRegistry();
  await registry.use(plugin);
  return { plugin, registry };
}

beforeEach(async () => {
  directory = await temporaryDirectory();
});
afterEach(async () => {
  await Promise.all(plugins.splice(0).map((plugin) => plugin.dispose()));
  await directory.remove();
});

describe('a server that crashes mid-call', () => {
  it('fails the call retryable and restarts the server for the next attempt', async () => {
    const marker = join(directory.path, 'crashed');
    const { plugin, registry } = await load('crash-server.mjs', { env: { CRASH_MARKER: marker } });
    const firstPid = plugin.pid;
    expect(firstPid).toBeGreaterThan(0);
    const result = await runWithKernel(makePlan([{ id: 'risky', tool: 'crash_once', args: {} }]), registry, {
      maxAttempts: 3,
    });
    const step = result.steps[0];
    expect(step).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(await readFile(marker, 'utf8')).toBe(String(firstPid));
    expect(step?.output).toMatchObject({ text: `survived in ${plugin.pid}` });
    expect(plugin.pid).not.toBe(firstPid);
    expect(isAlive(firstPid!)).toBe(false);
  });

  it('restarts once per run, then fails non-retryable with the server stderr', async () => {
    const { registry } = await load('crash-server.mjs');
    const result = await runWithKernel(makePlan([{ id: 'doomed', tool: 'crash_always', args: {} }]), registry, {
      maxAttempts: 5,
    });
    const step = result.steps[0];
    // Attempt 1 crashes (retryable), attempt 2 runs on the restarted server and crashes again
    // (retryable), attempt 3 finds the restart budget spent.
    expect(step).toMatchObject({ status: 'failed', attempt: 3, error: { code: 'E300', retryable: false } });
    expect(step?.error?.message).toContain('not restarting');
    expect(step?.error?.message).toContain('going down mid-call');

    // A new run gets a new budget.
    const next = await runWithKernel(makePlan([{ id: 'alive', tool: 'pid', args: {} }]), registry);
    expect(next.steps[0]?.status).toBe('succeeded');
  });

  it('reports the lost connection with the stderr of the crashed server', async () => {
    const { registry } = await load('crash-server.mjs');
    const result = await runWithKernel(makePlan([{ id: 'doomed', tool: 'crash_always', args: {} }]), registry);
    expect(result.steps[0]?.error).toMatchObject({ code: 'E300', retryable: true });
    expect(result.steps[0]?.error?.message).toMatch(/connection was lost.*going down mid-call/s);
  });
});

describe('a server that never answers', () => {
  it('times the step out (E306) and cancels the MCP request', async () => {
    const log = join(directory.path, 'cancel.log');
    await writeFile(log, '');
    const { registry } = await load('hang-server.mjs', { env: { CANCEL_LOG: log } });
    const result = await runWithKernel(makePlan([{ id: 'stuck', tool: 'hang', args: {}, timeoutMs: 300 }]), registry);
    expect(result.steps[0]).toMatchObject({ status: 'failed', error: { code: 'E306' } });
    await waitFor(async () => (await readFile(log, 'utf8')).includes('cancelled'));
    // The connection survives a timeout: the next call goes to the same server.
    const next = await runWithKernel(makePlan([{ id: 'alive', tool: 'pid', args: {} }]), registry);
    expect(next.steps[0]?.status).toBe('succeeded');
  });

  it('applies the plugin timeoutMs when the step sets none', async () => {
    const { registry } = await load('hang-server.mjs', { env: { CANCEL_LOG: '/dev/null' }, timeoutMs: 250 });
    expect(registry.get('hang')?.timeoutMs).toBe(250);
    const started = performance.now();
    const result = await runWithKernel(makePlan([{ id: 'stuck', tool: 'hang', args: {} }]), registry);
    expect(result.steps[0]?.error?.code).toBe('E306');
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('cancels the MCP request when the run is cancelled', async () => {
    const log = join(directory.path, 'cancel.log');
    await writeFile(log, '');
    const { registry } = await load('hang-server.mjs', { env: { CANCEL_LOG: log } });
    const controller = new AbortController();
    const running = runWithKernel(makePlan([{ id: 'stuck', tool: 'hang', args: {} }]), registry, {
      signal: controller.signal,
    });
    await waitFor(async () => (await readFile(log, 'utf8')).includes('started'));
    controller.abort(new Error('the user pressed stop'));
    const result = await running;
    expect(result.steps[0]).toMatchObject({ status: 'cancelled', error: { code: 'E307' } });
    await waitFor(async () => (await readFile(log, 'utf8')).includes('cancelled'));
  });
});

describe('environment', () => {
  it('passes only allowlisted, allowed and explicit variables', async () => {
    process.env.STEPWISE_TEST_SECRET_TOKEN = 'hunter2-very-secret';
    process.env.STEPWISE_TEST_ALLOWED = 'visible';
    process.env.STEPWISE_TEST_PREFIXED_ONE = 'one';
    try {
      const { registry } = await load('env-server.mjs', {
        env: { EXPLICIT_SETTING: 'yes' },
        envAllow: ['STEPWISE_TEST_ALLOWED', 'STEPWISE_TEST_PREFIXED_*'],
      });
      const result = await runWithKernel(makePlan([{ id: 'env', tool: 'environment', args: {} }]), registry);
      const output = result.steps[0]?.output as { text: string; structured: { variables: Record<string, string> } };
      const variables = output.structured.variables;
      expect(variables.STEPWISE_TEST_SECRET_TOKEN).toBeUndefined();
      expect(output.text).not.toContain('hunter2-very-secret');
      expect(variables).toMatchObject({
        STEPWISE_TEST_ALLOWED: 'visible',
        STEPWISE_TEST_PREFIXED_ONE: 'one',
        EXPLICIT_SETTING: 'yes',
        PATH: process.env.PATH,
      });
      const inherited = Object.keys(process.env).filter((name) => name in variables);
      expect(inherited.length).toBeLessThan(Object.keys(process.env).length);
    } finally {
      delete process.env.STEPWISE_TEST_SECRET_TOKEN;
      delete process.env.STEPWISE_TEST_ALLOWED;
      delete process.env.STEPWISE_TEST_PREFIXED_ONE;
    }
  });
});

describe('process lifetime', () => {
  it('kills the server on dispose, even one that ignores stdin and SIGTERM', async () => {
    const plugin = await mcpTools(
      fixtureServer('hang-server.mjs', { env: { CANCEL_LOG: '/dev/null', STUBBORN: '1' } }),
    );
    const pid = plugin.pid!;
    expect(isAlive(pid)).toBe(true);
    await plugin.dispose();
    // dispose() resolves once the process is gone.
    expect(isAlive(pid)).toBe(false);
    await plugin.dispose();
    const registry = new ToolRegistry();
    await registry.use(plugin);
    const result = await runWithKernel(makePlan([{ id: 'late', tool: 'pid', args: {} }]), registry);
    expect(result.steps[0]?.error).toMatchObject({ code: 'E300', retryable: false });
    expect(result.steps[0]?.error?.message).toContain('disposed');
  }, 20_000);

  it('disposes through the registry', async () => {
    const { plugin, registry } = await load('crash-server.mjs');
    const pid = plugin.pid!;
    await registry.dispose();
    expect(isAlive(pid)).toBe(false);
  });

  for (const how of ['exit', 'throw']) {
    it(`leaves no server behind when the host process ends (${how})`, async () => {
      const outcome = await run(process.execPath, [fixture('exit-host.mjs'), how]).catch((error) => error);
      const { pid } = JSON.parse(String(outcome.stdout).trim()) as { pid: number };
      expect(pid).toBeGreaterThan(0);
      try {
        await waitFor(() => !isAlive(pid), 5_000);
      } finally {
        // Do not leave a stubborn server behind when the assertion fails.
        if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      }
    }, 20_000);
  }
});

describe('lazy start', () => {
  it('starts nothing until the first call when the tool list is known', async () => {
    const probe = await load('crash-server.mjs');
    const listing = probe.plugin.listing;
    const plugin = await mcpTools(fixtureServer('crash-server.mjs', { knownTools: listing }));
    plugins.push(plugin);
    expect(plugin.pid).toBeUndefined();
    expect(plugin.server).toBeUndefined();
    const registry = new ToolRegistry();
    await registry.use(plugin);
    const result = await runWithKernel(makePlan([{ id: 'first', tool: 'pid', args: {} }]), registry);
    expect(result.steps[0]?.output).toMatchObject({ text: String(plugin.pid) });
    expect(plugin.server?.name).toBe('crasher');
  });
});

describe('through the dag engine', () => {
  it('retries a crashed call on the restarted server and times out a silent one (E306)', async () => {
    const marker = join(directory.path, 'crashed');
    const crash = await mcpTools(fixtureServer('crash-server.mjs', { env: { CRASH_MARKER: marker } }));
    const hang = await mcpTools(fixtureServer('hang-server.mjs', { env: { CANCEL_LOG: '/dev/null' } }));
    plugins.push(crash, hang);
    const registry = new ToolRegistry();
    await registry.use(crash, { prefix: 'crash_' });
    await registry.use(hang, { prefix: 'hang_' });
    const result = await dagEngine({ tools: registry, retry: { maxAttempts: 1 } }).run(
      makePlan([
        {
          id: 'flaky',
          tool: 'crash_crash_once',
          args: {},
          retry: { maxAttempts: 2, initialDelayMs: 10, factor: 1, maxDelayMs: 10, jitter: 0 },
        },
        { id: 'silent', tool: 'hang_hang', args: {}, timeoutMs: 300, critical: false },
      ]),
    ).result;
    const [flaky, silent] = result.steps;
    expect(flaky).toMatchObject({ status: 'succeeded', attempt: 2 });
    expect(silent).toMatchObject({ status: 'failed', error: { code: 'E306' } });
  });
});
