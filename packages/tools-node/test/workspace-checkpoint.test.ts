import { createHash } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rm,
  rmdir,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_TOO_LARGE, createCheckpoint, openCheckpoint, WorkspaceSandbox } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/** Every path under `root` with its type, permission bits, content hash or link target. */
async function tree(root: string, relative = ''): Promise<string[]> {
  const lines: string[] = [];
  for (const name of (await readdir(path.join(root, relative))).sort()) {
    const child = relative ? `${relative}/${name}` : name;
    const absolute = path.join(root, child);
    const stats = await lstat(absolute);
    const mode = (stats.mode & 0o7777).toString(8);
    if (stats.isSymbolicLink()) lines.push(`${child} -> ${await readlink(absolute)}`);
    else if (stats.isDirectory()) lines.push(`${child}/ ${mode}`, ...(await tree(root, child)));
    else
      lines.push(
        `${child} ${mode} ${createHash('sha256')
          .update(await readFile(absolute))
          .digest('hex')}`,
      );
  }
  return lines;
}

async function caught(promise: Promise<unknown>): Promise<StepwiseError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!StepwiseError.isInstance(error)) throw new Error(`expected a StepwiseError, got ${String(error)}`);
  return error;
}

const everyByte = Buffer.from(Array.from({ length: 256 }, (_, index) => index));

describe('createCheckpoint', () => {
  let harness: Harness;
  let ws: string;
  beforeEach(async () => {
    harness = await createHarness();
    ws = harness.workspace;
    await mkdir(path.join(ws, 'src/lib'), { recursive: true });
    await mkdir(path.join(ws, 'empty'));
    await mkdir(path.join(ws, 'node_modules/dep'), { recursive: true });
    await writeFile(path.join(ws, 'src/index.js'), 'export const a = 1;\r\nexport const b = 2;\n');
    await writeFile(path.join(ws, 'src/lib/data.bin'), everyByte);
    await writeFile(path.join(ws, 'run.sh'), '#!/bin/sh\necho hi\n');
    await chmod(path.join(ws, 'run.sh'), 0o755);
    await writeFile(path.join(ws, 'node_modules/dep/index.js'), 'module.exports = 1;\n');
    await writeFile(path.join(ws, '.gitignore'), 'dist/\n');
    await symlink('src/index.js', path.join(ws, 'entry.js'));
  });
  afterEach(() => harness.cleanup());

  it('restores the whole workspace byte for byte and deletes what the attempt created', async () => {
    const before = await tree(ws);
    const checkpoint = await createCheckpoint({ workspace: ws });
    expect(checkpoint.bytes).toBe(
      Buffer.byteLength('export const a = 1;\r\nexport const b = 2;\n') + 256 + 18 + Buffer.byteLength('dist/\n'),
    );

    // The attempt: edits, a deletion, new files and directories, a mode change, a removed empty
    // directory, and a directory replaced by a symlink that leads outside the workspace.
    await writeFile(path.join(ws, 'src/index.js'), 'export const a = 2;\n');
    await unlink(path.join(ws, 'run.sh'));
    await writeFile(path.join(ws, 'src/new.js'), 'new');
    await mkdir(path.join(ws, 'created/deep'), { recursive: true });
    await writeFile(path.join(ws, 'created/deep/file.txt'), 'x');
    await chmod(path.join(ws, 'src/lib/data.bin'), 0o600);
    await rmdir(path.join(ws, 'empty'));
    await rm(path.join(ws, 'src/lib'), { recursive: true });
    await symlink(harness.outside, path.join(ws, 'src/lib'));

    expect(await checkpoint.changes()).toEqual({
      created: ['created', 'created/deep', 'src/lib', 'src/new.js', 'created/deep/file.txt'],
      modified: ['src/index.js'],
      deleted: ['empty', 'run.sh', 'src/lib', 'src/lib/data.bin'],
    });
    const restored = await checkpoint.restore();
    expect(restored.created).toContain('src/new.js');

    expect(await tree(ws)).toEqual(before);
    expect(await readdir(harness.outside)).toEqual([]);
    expect(await readFile(path.join(ws, 'src/lib/data.bin'))).toEqual(everyByte);
    expect(await checkpoint.changes()).toEqual({ created: [], modified: [], deleted: [] });
  });

  it('leaves node_modules and gitignored output alone', async () => {
    const checkpoint = await createCheckpoint({ workspace: ws });
    await mkdir(path.join(ws, 'dist'));
    await writeFile(path.join(ws, 'dist/out.js'), 'built');
    await writeFile(path.join(ws, 'node_modules/dep/index.js'), 'module.exports = 2;\n');
    await writeFile(path.join(ws, 'src/index.js'), 'changed');

    expect((await checkpoint.restore()).modified).toEqual(['src/index.js']);
    expect(await readFile(path.join(ws, 'dist/out.js'), 'utf8')).toBe('built');
    expect(await readFile(path.join(ws, 'node_modules/dep/index.js'), 'utf8')).toBe('module.exports = 2;\n');
    expect(await readFile(path.join(ws, 'src/index.js'), 'utf8')).toBe('export const a = 1;\r\nexport const b = 2;\n');
  });

  it('never records or restores excluded file names, such as a journal written meanwhile', async () => {
    await mkdir(path.join(ws, '.stepwise'));
    await writeFile(path.join(ws, '.stepwise/stepwise.db'), 'journal v1');
    await writeFile(path.join(ws, 'journal.db-wal'), 'wal v1');
    const checkpoint = await createCheckpoint({
      workspace: ws,
      exclude: ['node_modules', '.stepwise', 'journal.db-wal'],
    });
    await writeFile(path.join(ws, '.stepwise/stepwise.db'), 'journal v2');
    await writeFile(path.join(ws, 'journal.db-wal'), 'wal v2');
    await writeFile(path.join(ws, 'src/index.js'), 'changed');

    expect(await checkpoint.restore()).toEqual({ created: [], modified: ['src/index.js'], deleted: [] });
    expect(await readFile(path.join(ws, '.stepwise/stepwise.db'), 'utf8')).toBe('journal v2');
    expect(await readFile(path.join(ws, 'journal.db-wal'), 'utf8')).toBe('wal v2');
  });

  it('checkpoints only the paths given, including one that does not exist yet', async () => {
    const checkpoint = await createCheckpoint({
      workspace: new WorkspaceSandbox({ root: ws }),
      paths: ['src', 'notes.md'],
    });
    await writeFile(path.join(ws, 'src/index.js'), 'changed');
    await writeFile(path.join(ws, 'notes.md'), 'created by the attempt');
    await writeFile(path.join(ws, 'run.sh'), 'outside the checkpoint');

    const restored = await checkpoint.restore();
    expect(restored).toEqual({ created: ['notes.md'], modified: ['src/index.js'], deleted: [] });
    await expect(lstat(path.join(ws, 'notes.md'))).rejects.toThrow(/ENOENT/);
    expect(await readFile(path.join(ws, 'run.sh'), 'utf8')).toBe('outside the checkpoint');
  });

  it('refuses paths outside the workspace and snapshots over the caps with typed errors', async () => {
    const outside = await caught(createCheckpoint({ workspace: ws, paths: ['../outside'] }));
    expect(outside.code).toBe(ErrorCodes.SANDBOX_VIOLATION);
    expect(outside.location).toBe('../outside');

    const large = await caught(createCheckpoint({ workspace: ws, maxBytes: 100 }));
    expect(large.code).toBe(CHECKPOINT_TOO_LARGE);
    expect(large.location).toBe('src/lib/data.bin');
    const many = await caught(createCheckpoint({ workspace: ws, maxEntries: 3 }));
    expect(many.code).toBe(CHECKPOINT_TOO_LARGE);
  });

  it('never restores into .git, even when asked to include everything', async () => {
    await mkdir(path.join(ws, '.git'));
    await writeFile(path.join(ws, '.git/config'), '[core]\n');
    const checkpoint = await createCheckpoint({ workspace: ws, exclude: [], gitignore: false });
    await writeFile(path.join(ws, '.git/config'), '[core]\n\thooksPath = evil\n');
    await writeFile(path.join(ws, 'node_modules/dep/index.js'), 'changed');
    const restored = await checkpoint.restore();
    expect(restored.modified).toEqual(['node_modules/dep/index.js']);
    expect(await readFile(path.join(ws, '.git/config'), 'utf8')).toContain('hooksPath');
  });

  it('is saved to a directory and reopened from it: ignored and new files restored byte for byte', async () => {
    await mkdir(path.join(ws, 'dist'));
    await writeFile(path.join(ws, 'dist/out.js'), 'built');
    const before = await tree(ws);
    const directory = path.join(harness.base, 'saved');
    const options = { workspace: ws, gitignore: false, exclude: ['node_modules'] } as const;
    await (await createCheckpoint(options)).save(directory);

    // What another process finds after a crash: the saved record, and the attempt's changes.
    await writeFile(path.join(ws, 'dist/out.js'), 'changed');
    await writeFile(path.join(ws, 'dist/extra.bin'), everyByte);
    await writeFile(path.join(ws, 'src/lib/data.bin'), 'truncated');
    await unlink(path.join(ws, 'run.sh'));
    const reopened = await openCheckpoint(directory, options);
    expect(await reopened.changes()).toEqual({
      created: ['dist/extra.bin'],
      modified: ['dist/out.js', 'src/lib/data.bin'],
      deleted: ['run.sh'],
    });
    await reopened.restore();
    expect(await tree(ws)).toEqual(before);
    expect(await readFile(path.join(ws, 'src/lib/data.bin'))).toEqual(everyByte);
  });

  it('refuses a directory that holds no checkpoint (E601)', async () => {
    const error = await caught(openCheckpoint(path.join(harness.base, 'missing'), { workspace: ws }));
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
  });
});
