import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { pluginScope, runWithKernel, waitFor } from './helpers.js';

// A server that never answers: timeouts and cancellation reach it as MCP cancellations.
const scope = pluginScope();

describe('a server that never answers', () => {
  it('times the step out (E306) and cancels the MCP request', async () => {
    const log = join(scope.directory, 'cancel.log');
    await writeFile(log, '');
    const { registry } = await scope.load('hang-server.mjs', { env: { CANCEL_LOG: log } });
    const result = await runWithKernel(makePlan([{ id: 'stuck', tool: 'hang', args: {}, timeoutMs: 300 }]), registry);
    expect(result.steps[0]).toMatchObject({ status: 'failed', error: { code: 'E306' } });
    await waitFor(async () => (await readFile(log, 'utf8')).includes('cancelled'));
    // The connection survives a timeout: the next call goes to the same server.
    const next = await runWithKernel(makePlan([{ id: 'alive', tool: 'pid', args: {} }]), registry);
    expect(next.steps[0]?.status).toBe('succeeded');
  });

  it('applies the plugin timeoutMs when the step sets none', async () => {
    const { registry } = await scope.load('hang-server.mjs', { env: { CANCEL_LOG: '/dev/null' }, timeoutMs: 250 });
    expect(registry.get('hang')?.timeoutMs).toBe(250);
    const started = performance.now();
    const result = await runWithKernel(makePlan([{ id: 'stuck', tool: 'hang', args: {} }]), registry);
    expect(result.steps[0]?.error?.code).toBe('E306');
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('cancels the MCP request when the run is cancelled', async () => {
    const log = join(scope.directory, 'cancel.log');
    await writeFile(log, '');
    const { registry } = await scope.load('hang-server.mjs', { env: { CANCEL_LOG: log } });
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
