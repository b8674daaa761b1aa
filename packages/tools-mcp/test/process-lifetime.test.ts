import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { mcpTools } from '../src/index.js';
import { fixture, fixtureServer, isAlive, pluginScope, runWithKernel, waitFor } from './helpers.js';

// What the server process sees and how long it lives.
const scope = pluginScope();

const run = promisify(execFile);

describe('environment', () => {
  it('passes only allowlisted, allowed and explicit variables', async () => {
    process.env.STEPWISE_TEST_SECRET_TOKEN = 'hunter2-very-secret';
    process.env.STEPWISE_TEST_ALLOWED = 'visible';
    process.env.STEPWISE_TEST_PREFIXED_ONE = 'one';
    try {
      const { registry } = await scope.load('env-server.mjs', {
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

  it('scrubs the secret values it was given from what the server sends back, as commands do', async () => {
    const token = 'tok-4f8a1c9e77b2';
    const { registry } = await scope.load('env-server.mjs', {
      env: { SERVICE_TOKEN: token, SERVICE_REGION: 'eu-west' },
    });
    const result = await runWithKernel(makePlan([{ id: 'env', tool: 'environment', args: {} }]), registry);
    const output = result.steps[0]?.output as { text: string; structured: { variables: Record<string, string> } };
    expect(output.text).not.toContain(token);
    expect(output.structured.variables).toMatchObject({ SERVICE_TOKEN: '[REDACTED]', SERVICE_REGION: 'eu-west' });
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
    const { plugin, registry } = await scope.load('crash-server.mjs');
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
    const probe = await scope.load('crash-server.mjs');
    const listing = probe.plugin.listing;
    // The server answers with its own pid, compared with the host's: outside the OS sandbox's pid namespace.
    const plugin = await mcpTools(fixtureServer('crash-server.mjs', { knownTools: listing, sandbox: 'off' }));
    scope.plugins.push(plugin);
    expect(plugin.pid).toBeUndefined();
    expect(plugin.server).toBeUndefined();
    const registry = new ToolRegistry();
    await registry.use(plugin);
    const result = await runWithKernel(makePlan([{ id: 'first', tool: 'pid', args: {} }]), registry);
    expect(result.steps[0]?.output).toMatchObject({ text: String(plugin.pid) });
    expect(plugin.server?.name).toBe('crasher');
  });
});

describe('servers that cannot start', () => {
  it('reports a missing executable as E602', async () => {
    await expect(mcpTools({ command: join(scope.directory, 'no-such-server') })).rejects.toMatchObject({
      code: 'E602',
      message: expect.stringContaining('ENOENT'),
    });
  });

  it('reports a server that exits during startup as E602 with its stderr', async () => {
    await expect(
      mcpTools({ command: process.execPath, args: ['-e', 'console.error("missing CONFIG_PATH"); process.exit(2)'] }),
    ).rejects.toMatchObject({ code: 'E602', message: expect.stringContaining('missing CONFIG_PATH') });
  });

  it('fails the step non-retryable when a lazily started server cannot start', async () => {
    const plugin = await mcpTools({
      command: join(scope.directory, 'no-such-server'),
      knownTools: [{ name: 'anything', inputSchema: { type: 'object' } }],
    });
    scope.plugins.push(plugin);
    const registry = new ToolRegistry();
    await registry.use(plugin);
    const result = await runWithKernel(makePlan([{ id: 'first', tool: 'anything', args: {} }]), registry, {
      maxAttempts: 3,
    });
    expect(result.steps[0]).toMatchObject({ status: 'failed', attempt: 1, error: { code: 'E300', retryable: false } });
    expect(result.steps[0]?.error?.message).toContain('could not be started');
  });

  it('fails a call in flight non-retryable when the plugin is disposed', async () => {
    const log = join(scope.directory, 'cancel.log');
    await writeFile(log, '');
    const { plugin, registry } = await scope.load('hang-server.mjs', { env: { CANCEL_LOG: log } });
    const running = runWithKernel(makePlan([{ id: 'stuck', tool: 'hang', args: {} }]), registry, { maxAttempts: 3 });
    await waitFor(async () => (await readFile(log, 'utf8')).includes('started'));
    await plugin.dispose();
    const result = await running;
    expect(result.steps[0]).toMatchObject({ status: 'failed', attempt: 1, error: { code: 'E300', retryable: false } });
    expect(result.steps[0]?.error?.message).toContain('disposed during the call');
  });
});
