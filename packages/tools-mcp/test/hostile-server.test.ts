import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { mcpTools } from '../src/index.js';
import { fixtureServer, pluginScope, runWithKernel, waitFor } from './helpers.js';

// A third-party server decides what it lists and what it answers: none of it may retry a write
// tool that ran, leave its process behind, or keep `mcpTools` waiting.
const scope = pluginScope();

async function callsLogged(name: string) {
  const calls = join(scope.directory, `${name}.calls`);
  await writeFile(calls, '');
  return { calls, count: async () => (await readFile(calls, 'utf8')).split('\n').filter(Boolean).length };
}

describe('a server that answers with its own JSON-RPC errors', () => {
  it('fails a write tool once on -32000 with the server message: not a lost connection, not retried', async () => {
    const { calls, count } = await callsLogged('quota');
    const { registry } = await scope.load('hostile-server.mjs', { env: { CALLS: calls } });
    const result = await runWithKernel(makePlan([{ id: 'pay', tool: 'quota', args: {} }]), registry, {
      maxAttempts: 3,
    });
    expect(result.steps[0]?.error).toMatchObject({ code: 'E300', retryable: false, details: { mcpCode: -32000 } });
    expect(result.steps[0]?.error?.message).toContain('quota exceeded for this account');
    expect(await count()).toBe(1);
  });

  it('retries a server-side timeout (-32001) only for an idempotent tool', async () => {
    const { calls, count } = await callsLogged('slow');
    const { registry } = await scope.load('hostile-server.mjs', { env: { CALLS: calls } });
    const result = await runWithKernel(makePlan([{ id: 'send', tool: 'slow', args: {} }]), registry, {
      maxAttempts: 3,
    });
    expect(result.steps[0]?.error).toMatchObject({ code: 'E306', retryable: false });
    expect(await count()).toBe(1);
  });
});

describe('a server whose listing cannot be registered as it is', () => {
  it('keeps two names that are one once cut to 128 characters apart, within 128', async () => {
    const { registry } = await scope.load('hostile-server.mjs', { env: { LIST: 'longdup' } });
    const names = registry.list().map((tool) => tool.name);
    expect(names).toHaveLength(3);
    expect(new Set(names).size).toBe(3);
    expect(names.every((name) => name.length <= 128)).toBe(true);
  });

  it('refuses a server that pages its tools for ever (E602), and stops it', async () => {
    const tag = `--tag=${randomUUID()}`;
    const running = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).includes(tag);
    const started = performance.now();
    const options = fixtureServer('hostile-server.mjs', {
      env: { LIST: 'paging' },
      connectTimeoutMs: 1_500,
      sandbox: 'off',
    });
    const loading = mcpTools({ ...options, args: [...(options.args ?? []), tag] });
    await expect(loading).rejects.toMatchObject({
      code: 'E602',
      message: expect.stringContaining('kept paging its tools'),
    });
    expect(performance.now() - started).toBeLessThan(10_000);
    await waitFor(() => !running());
  });
});
