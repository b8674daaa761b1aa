import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { setDescriptorModeForTesting } from '../src/directory-descriptor.js';
import { createNodeTools, osSandboxStatus } from '../src/index.js';
import { createHarness } from './helpers.js';

/** No silent absence of a boundary, and every command's result says how it ran. */
const status = await osSandboxStatus();

describe('checkArguments: false needs a boundary', () => {
  const workspace = tmpdir();

  it.each(['available', 'off', undefined] as const)('refuses sandbox %s at construction (E601)', (sandbox) => {
    const build = () =>
      createNodeTools({
        workspace,
        commands: { allow: ['node'], checkArguments: false, ...(sandbox ? { sandbox } : {}) },
      });
    expect(build).toThrow(/checkArguments: false .*no boundary at all/);
    try {
      build();
    } catch (error) {
      expect(error).toMatchObject({ code: 'E601', location: 'commands.checkArguments' });
    }
  });

  it('accepts sandbox "required", or an explicit unsafeNoBoundary', () => {
    expect(() =>
      createNodeTools({ workspace, commands: { allow: ['node'], checkArguments: false, sandbox: 'required' } }),
    ).not.toThrow();
    expect(() =>
      createNodeTools({
        workspace,
        commands: { allow: ['node'], checkArguments: false, sandbox: 'off', unsafeNoBoundary: true },
      }),
    ).not.toThrow();
  });
});

describe('run_command records whether it ran sandboxed', () => {
  it('says "none" with the sandbox off, in the output and the journaled error', async () => {
    const harness = await createHarness({ commands: { allow: ['node'], sandbox: 'off' } });
    try {
      const ok = await harness.call('run_command', { command: ['node', '--version'] });
      expect((ok.output as { sandbox: unknown }).sandbox).toEqual({ kind: 'none', network: true, reason: 'off' });
      await writeFile(path.join(harness.workspace, 'fail.js'), 'process.exit(2)');
      const failed = await harness.call('run_command', { command: ['node', 'fail.js'] });
      expect(failed.error?.details).toMatchObject({ sandbox: { kind: 'none', reason: 'off' } });
    } finally {
      await harness.cleanup();
    }
  });

  it.skipIf(!status.available)('says "bubblewrap", with or without network', async () => {
    for (const network of [false, true]) {
      const harness = await createHarness({
        commands: { allow: ['node'], sandbox: 'required', sandboxOptions: { network } },
      });
      try {
        const outcome = await harness.call('run_command', { command: ['node', '--version'] });
        expect((outcome.output as { sandbox: unknown }).sandbox).toEqual({
          kind: 'bubblewrap',
          network,
          unprivileged: true,
        });
      } finally {
        await harness.cleanup();
      }
    }
  });
});

describe('file tools without /proc (the identity fallback)', () => {
  afterEach(() => setDescriptorModeForTesting(undefined));

  it('reads, lists, searches, writes and deletes, and refuses a symlink that leads out', async () => {
    setDescriptorModeForTesting('identity');
    const harness = await createHarness();
    const outside = await realpath(await mkdtemp(path.join(tmpdir(), 'stepwise-outside-')));
    try {
      await writeFile(path.join(outside, 'secret.txt'), 'outside secret');
      await mkdir(path.join(harness.workspace, 'd'));
      await writeFile(path.join(harness.workspace, 'd', 'a.txt'), 'inside a\n');
      await symlink(outside, path.join(harness.workspace, 'out'));
      expect((await harness.call('file_read', { path: 'd/a.txt' })).output).toMatchObject({ contents: 'inside a\n' });
      const listing = await harness.call('dir_list', { path: '.', depth: 3 });
      expect((listing.output as { entries: { path: string }[] }).entries.map((entry) => entry.path)).toEqual([
        'd',
        'out',
        'd/a.txt',
      ]);
      const search = await harness.call('file_search', { query: 'secret' });
      expect((search.output as { matches: unknown[] }).matches).toEqual([]);
      expect((await harness.call('file_write', { path: 'd/sub/b.txt', contents: 'b' })).status).toBe('succeeded');
      expect((await harness.call('file_delete', { path: 'd', recursive: true })).status).toBe('succeeded');
      expect((await harness.call('file_read', { path: 'out/secret.txt' })).error?.code).toBe('E402');
    } finally {
      await harness.cleanup();
      await rm(outside, { recursive: true, force: true });
    }
  });
});
