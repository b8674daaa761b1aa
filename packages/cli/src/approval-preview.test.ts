import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { previewChange } from './approval-preview.js';

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(path.join(os.tmpdir(), 'stepwise-preview-'));
  await writeFile(path.join(workspace, 'a.txt'), 'one\ntwo\nthree\n');
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

describe('previewChange', () => {
  it('diffs a file_write against the current file, and a new file against nothing', async () => {
    const overwrite = await previewChange('file_write', { path: 'a.txt', contents: 'one\n2\nthree\n' }, workspace);
    expect(overwrite?.diff).toContain('-two\n+2\n');
    const created = await previewChange('file_create', { path: 'new/b.txt', contents: 'hello\n' }, workspace);
    expect(created?.diff).toContain('@@ -0,0 +1,1 @@\n+hello\n');
  });

  it('applies file_edit edits in order, per file, and flags an edit that will not apply', async () => {
    await writeFile(path.join(workspace, 'b.txt'), 'alpha\nbeta\n');
    const preview = await previewChange(
      'file_edit',
      {
        path: 'a.txt',
        edits: [
          { search: 'two', replace: 'TWO' },
          { search: 'TWO\nthree', replace: 'TWO\n3' },
          { path: 'b.txt', search: 'beta', replace: 'BETA' },
          { search: 'missing', replace: 'x' },
        ],
      },
      workspace,
    );
    expect(preview?.diff).toContain('--- a/a.txt');
    expect(preview?.diff).toContain('+TWO\n+3\n');
    expect(preview?.diff).toContain('--- a/b.txt');
    expect(preview?.diff).toContain('+BETA');
    expect(preview?.notes).toEqual([
      'edit 3 does not match exactly once in a.txt: the tool will refuse the whole call',
    ]);
  });

  it('does not read outside the workspace, even through a symlink', async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), 'stepwise-outside-'));
    try {
      await writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET\n');
      await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'link.txt'));
      const viaLink = await previewChange('file_write', { path: 'link.txt', contents: 'x' }, workspace);
      expect(viaLink?.diff).toBe('');
      expect(viaLink?.notes[0]).toMatch(/outside the workspace/);
      const viaDots = await previewChange('file_write', { path: '../x/../../etc/passwd', contents: 'x' }, workspace);
      expect(JSON.stringify(viaDots)).not.toContain('root:');
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('shows a file_patch as given and ignores other tools', async () => {
    expect((await previewChange('file_patch', { patch: '--- a/x\n+++ b/x\n' }, workspace))?.diff).toBe(
      '--- a/x\n+++ b/x\n',
    );
    expect(await previewChange('run_command', { command: ['ls'] }, workspace)).toBeUndefined();
    expect((await previewChange('fs_file_write', { path: 'a.txt', contents: '' }, workspace))?.diff).toContain('-one');
  });
});
