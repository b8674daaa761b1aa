import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { describe, expect, it } from 'vitest';
import { mcpTools } from '../src/index.js';
import { fixtureServer, isAlive, pluginScope, runWithKernel } from './helpers.js';

// A server that dies mid-call: the call fails retryable, the next one gets a restarted server.
const scope = pluginScope();

describe('a server that crashes mid-call', () => {
  it('fails the call retryable and restarts the server for the next attempt', async () => {
    const marker = join(scope.directory, 'crashed');
    // Compares the server's own pid with the host's: outside the OS sandbox, whose pid namespace renumbers it.
    const { plugin, registry } = await scope.load('crash-server.mjs', {
      env: { CRASH_MARKER: marker },
      sandbox: 'off',
    });
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
    const { registry } = await scope.load('crash-server.mjs');
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
    const { registry } = await scope.load('crash-server.mjs');
    const result = await runWithKernel(makePlan([{ id: 'doomed', tool: 'crash_always', args: {} }]), registry);
    expect(result.steps[0]?.error).toMatchObject({ code: 'E300', retryable: true });
    expect(result.steps[0]?.error?.message).toMatch(/connection was lost.*going down mid-call/s);
  });
});

describe('through the dag engine', () => {
  it('retries a crashed call on the restarted server and times out a silent one (E306)', async () => {
    const marker = join(scope.directory, 'crashed');
    const crash = await mcpTools(
      fixtureServer('crash-server.mjs', {
        env: { CRASH_MARKER: marker },
        sandboxOptions: { workspace: scope.directory },
      }),
    );
    const hang = await mcpTools(fixtureServer('hang-server.mjs', { env: { CANCEL_LOG: '/dev/null' } }));
    scope.plugins.push(crash, hang);
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
