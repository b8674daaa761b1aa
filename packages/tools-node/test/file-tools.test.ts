import { constants } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rename, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FileSystem, nodeFileSystem, WorkspaceSandbox } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

let harness: Harness;
const file = (name: string) => path.join(harness.workspace, name);

beforeEach(async () => {
  harness = await createHarness();
});

afterEach(async () => {
  await harness.cleanup();
});

describe('file_read', () => {
  it('reads text and reports size, encoding and line endings', async () => {
    await writeFile(file('a.txt'), 'héllo\r\nworld\r\n');
    const outcome = await harness.call('file_read', { path: 'a.txt' });
    expect(outcome.output).toMatchObject({
      path: 'a.txt',
      contents: 'héllo\r\nworld\r\n',
      encoding: 'utf8',
      size: 15,
      truncated: false,
      binary: false,
      lineEnding: 'crlf',
    });
  });

  it('returns a line range', async () => {
    await writeFile(file('lines.txt'), Array.from({ length: 10 }, (_, index) => `line ${index + 1}`).join('\n'));
    const outcome = await harness.call('file_read', { path: 'lines.txt', startLine: 3, endLine: 5 });
    expect(outcome.output).toMatchObject({ contents: 'line 3\nline 4\nline 5\n', startLine: 3, endLine: 5 });
    const tail = await harness.call('file_read', { path: 'lines.txt', startLine: 9 });
    expect(tail.output).toMatchObject({ contents: 'line 9\nline 10', endLine: 10 });
  });

  it('streams a line range out of a large file', async () => {
    const lines = Array.from({ length: 200_000 }, (_, index) => `row ${index + 1}`);
    await writeFile(file('big.txt'), lines.join('\n'));
    const outcome = await harness.call('file_read', { path: 'big.txt', startLine: 150_000, endLine: 150_002 });
    expect((outcome.output as { contents: string }).contents).toBe('row 150000\nrow 150001\nrow 150002\n');
  });

  it('caps bytes without splitting a character', async () => {
    await writeFile(file('u.txt'), 'ab€cd');
    const outcome = await harness.call('file_read', { path: 'u.txt', maxBytes: 3 });
    expect(outcome.output).toMatchObject({ contents: 'ab', truncated: true, bytes: 2, size: 7 });
  });

  it('refuses binary files unless asked for base64', async () => {
    await writeFile(file('b.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01]));
    const refused = await harness.call('file_read', { path: 'b.bin' });
    expect(refused.error?.code).toBe('E300');
    expect(refused.error?.message).toContain('base64');
    const read = await harness.call('file_read', { path: 'b.bin', encoding: 'base64' });
    expect(read.output).toMatchObject({ contents: 'iVAAAQ==', encoding: 'base64', binary: true });
  });

  it('reports Latin-1 text that is not UTF-8', async () => {
    await writeFile(file('l.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect((await harness.call('file_read', { path: 'l.txt' })).output).toMatchObject({
      contents: 'café',
      encoding: 'latin1',
    });
  });

  it('fails with E301 for a missing file and refuses directories', async () => {
    expect((await harness.call('file_read', { path: 'missing.txt' })).error).toMatchObject({
      code: 'E301',
      location: 'missing.txt',
    });
    await mkdir(file('dir'));
    expect((await harness.call('file_read', { path: 'dir' })).error?.message).toContain('dir_list');
  });

  it('refuses a FIFO without waiting for a writer', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [file('pipe')]);
    expect((await harness.call('file_read', { path: 'pipe' })).error?.message).toContain('not a regular file');
    expect(
      (await harness.call('file_edit', { path: 'pipe', edits: [{ search: 'a', replace: 'b' }] })).error?.message,
    ).toContain('not a regular file');
    expect((await harness.call('file_search', { query: 'a', path: 'pipe' })).output).toMatchObject({ matches: [] });
  });

  it('refuses a range that ends before it starts', async () => {
    await writeFile(file('a.txt'), 'x');
    expect((await harness.call('file_read', { path: 'a.txt', startLine: 5, endLine: 2 })).error?.code).toBe('E202');
  });
});

describe('file_write and file_create', () => {
  it('writes atomically, creating directories, and says whether it created the file', async () => {
    const first = await harness.call('file_write', { path: 'deep/er/out.txt', contents: 'one' });
    expect(first.output).toEqual({ path: 'deep/er/out.txt', bytes: 3, created: true });
    const second = await harness.call('file_write', { path: 'deep/er/out.txt', contents: 'two' });
    expect(second.output).toMatchObject({ created: false });
    expect(await readFile(file('deep/er/out.txt'), 'utf8')).toBe('two');
    expect((await readdir(file('deep/er'))).filter((name) => name.startsWith('.stepwise-'))).toEqual([]);
  });

  it('writes base64 contents and keeps the old mode', async () => {
    await writeFile(file('x.sh'), 'old', { mode: 0o750 });
    await harness.call('file_write', {
      path: 'x.sh',
      contents: Buffer.from('new').toString('base64'),
      encoding: 'base64',
    });
    expect(await readFile(file('x.sh'), 'utf8')).toBe('new');
    expect((await stat(file('x.sh'))).mode & 0o777).toBe(0o750);
  });

  it('refuses to create missing directories when asked not to', async () => {
    const outcome = await harness.call('file_write', { path: 'nope/x.txt', contents: 'x', createDirectories: false });
    expect(outcome.error?.code).toBe('E301');
  });

  it('file_create refuses an existing file and a directory', async () => {
    await writeFile(file('exists.txt'), 'keep');
    const outcome = await harness.call('file_create', { path: 'exists.txt', contents: 'x' });
    expect(outcome.error).toMatchObject({ code: 'E300', location: 'exists.txt' });
    expect(await readFile(file('exists.txt'), 'utf8')).toBe('keep');
    await mkdir(file('d'));
    expect((await harness.call('file_create', { path: 'd' })).status).toBe('failed');
    expect((await harness.call('file_create', { path: 'fresh.txt', contents: 'new' })).output).toEqual({
      path: 'fresh.txt',
      bytes: 3,
    });
  });

  it('declares effects and idempotency for approvals and resume', () => {
    const flags = Object.fromEntries(
      harness.registry.list().map((tool) => [tool.name, `${tool.effect}/${tool.idempotent ? 'idempotent' : 'once'}`]),
    );
    expect(flags).toEqual({
      file_read: 'read/idempotent',
      file_write: 'write/idempotent',
      file_create: 'write/once',
      file_delete: 'destructive/once',
      file_edit: 'write/once',
      file_patch: 'write/once',
      dir_list: 'read/idempotent',
      file_glob: 'read/idempotent',
      file_search: 'read/idempotent',
      run_command: 'exec/once',
    });
  });
});

/** A file system that runs `hook` just before the first exclusive create of a temporary file. */
function hookedFileSystem(hook: (target: string) => Promise<void>): FileSystem {
  let fired = false;
  return {
    ...nodeFileSystem,
    open: (async (target: string, flags?: number, mode?: number) => {
      if (!fired && typeof flags === 'number' && flags & constants.O_EXCL) {
        fired = true;
        await hook(target);
      }
      return nodeFileSystem.open(target, flags, mode);
    }) as FileSystem['open'],
  };
}

describe('time-of-check to time-of-use', () => {
  it('does not follow a symlink planted at the target after the check', async () => {
    await harness.cleanup();
    let outsideFile = '';
    harness = await createHarness({
      fileSystem: hookedFileSystem(async () => {
        await symlink(outsideFile, file('target.txt'));
      }),
    });
    outsideFile = path.join(harness.outside, 'victim.txt');
    await writeFile(outsideFile, 'original outside');
    const outcome = await harness.call('file_write', { path: 'target.txt', contents: 'attacker controlled?' });
    expect(outcome.status).toBe('succeeded');
    expect(await readFile(outsideFile, 'utf8')).toBe('original outside');
    expect((await lstat(file('target.txt'))).isSymbolicLink()).toBe(false);
    expect(await readFile(file('target.txt'), 'utf8')).toBe('attacker controlled?');
  });

  it('file_create fails instead of following a symlink planted after the check', async () => {
    await harness.cleanup();
    let outsideFile = '';
    harness = await createHarness({
      fileSystem: hookedFileSystem(async () => {
        await symlink(outsideFile, file('new.txt'));
      }),
    });
    outsideFile = path.join(harness.outside, 'not-created.txt');
    const outcome = await harness.call('file_create', { path: 'new.txt', contents: 'x' });
    expect(outcome.error?.code).toBe('E308');
    await expect(lstat(outsideFile)).rejects.toThrow();
    expect((await readdir(harness.workspace)).filter((name) => name.startsWith('.stepwise-'))).toEqual([]);
  });

  it('refuses when a parent directory is swapped for an outside symlink after the check', async () => {
    await harness.cleanup();
    harness = await createHarness({
      fileSystem: hookedFileSystem(async () => {
        await rename(file('dir'), file('dir-moved'));
        await symlink(harness.outside, file('dir'));
      }),
    });
    await mkdir(file('dir'));
    const outcome = await harness.call('file_write', { path: 'dir/x.txt', contents: 'escaped?' });
    expect(outcome.error?.code).toBe('E402');
    expect(await readdir(harness.outside)).toEqual([]);
  });
});

describe('file_delete', () => {
  it('deletes files, empty directories, and non-empty ones only when recursive', async () => {
    await writeFile(file('a.txt'), 'x');
    await mkdir(file('empty'));
    await mkdir(file('full/inner'), { recursive: true });
    await writeFile(file('full/inner/f.txt'), 'x');
    expect((await harness.call('file_delete', { path: 'a.txt' })).output).toEqual({
      path: 'a.txt',
      type: 'file',
      deleted: true,
    });
    expect((await harness.call('file_delete', { path: 'empty' })).output).toMatchObject({ type: 'directory' });
    const refused = await harness.call('file_delete', { path: 'full' });
    expect(refused.error?.message).toContain('recursive');
    expect((await harness.call('file_delete', { path: 'full', recursive: true })).status).toBe('succeeded');
    await expect(lstat(file('full'))).rejects.toThrow();
    expect((await harness.call('file_delete', { path: 'a.txt' })).error?.code).toBe('E301');
  });
});

describe('dir_list', () => {
  it('lists entries with type and size, deeper on request, without following symlinks', async () => {
    await writeFile(file('a.txt'), '12345');
    await mkdir(file('sub/deeper'), { recursive: true });
    await writeFile(file('sub/deeper/b.txt'), 'x');
    await symlink(harness.outside, file('out-link'));
    await mkdir(file('node_modules/pkg'), { recursive: true });
    const shallow = (await harness.call('dir_list', {})).output as {
      entries: { path: string; type: string; size: number }[];
    };
    expect(shallow.entries).toEqual([
      { path: 'a.txt', name: 'a.txt', type: 'file', size: 5 },
      { path: 'node_modules', name: 'node_modules', type: 'directory', size: 0 },
      expect.objectContaining({ path: 'out-link', type: 'symlink' }),
      { path: 'sub', name: 'sub', type: 'directory', size: 0 },
    ]);
    const deep = (await harness.call('dir_list', { depth: 5 })).output as { entries: { path: string }[] };
    expect(deep.entries.map((entry) => entry.path)).toEqual([
      'a.txt',
      'node_modules',
      'out-link',
      'sub',
      'sub/deeper',
      'sub/deeper/b.txt',
    ]);
    const capped = (await harness.call('dir_list', { depth: 5, maxEntries: 2 })).output as { truncated: boolean };
    expect(capped.truncated).toBe(true);
    await mkdir(file('.config/inner'), { recursive: true });
    await writeFile(file('.config/inner/x.txt'), 'x');
    const visible = (await harness.call('dir_list', { depth: 5, includeHidden: false })).output as {
      entries: { path: string }[];
    };
    expect(visible.entries.map((entry) => entry.path)).toEqual(deep.entries.map((entry) => entry.path));
    const hidden = (await harness.call('dir_list', { depth: 5 })).output as { entries: { path: string }[] };
    expect(hidden.entries.map((entry) => entry.path)).toContain('.config/inner/x.txt');
  });
});

describe('file_glob', () => {
  it('matches patterns, honours nested .gitignore files and caps results', async () => {
    await mkdir(file('src/generated'), { recursive: true });
    await mkdir(file('dist'));
    await mkdir(file('node_modules/x'), { recursive: true });
    await writeFile(file('.gitignore'), 'dist/\n*.log\n');
    await writeFile(file('src/.gitignore'), 'generated/\n!keep.log\n');
    for (const name of [
      'src/a.ts',
      'src/b.ts',
      'src/generated/g.ts',
      'dist/d.ts',
      'node_modules/x/i.ts',
      'src/keep.log',
      'top.log',
    ]) {
      await writeFile(file(name), 'x');
    }
    const ts = (await harness.call('file_glob', { pattern: '**/*.ts' })).output as { paths: string[] };
    expect(ts.paths).toEqual(['src/a.ts', 'src/b.ts']);
    const logs = (await harness.call('file_glob', { pattern: '**/*.log' })).output as { paths: string[] };
    expect(logs.paths).toEqual(['src/keep.log']);
    const everything = (await harness.call('file_glob', { pattern: '**/*.ts', gitignore: false })).output as {
      paths: string[];
    };
    expect(everything.paths).toEqual([
      'dist/d.ts',
      'node_modules/x/i.ts',
      'src/a.ts',
      'src/b.ts',
      'src/generated/g.ts',
    ]);
    const capped = (await harness.call('file_glob', { pattern: '**/*.ts', gitignore: false, maxResults: 2 })).output;
    expect(capped).toMatchObject({ paths: ['dist/d.ts', 'node_modules/x/i.ts'], truncated: true, count: 5 });
  });
});

describe('file_search', () => {
  beforeEach(async () => {
    await mkdir(file('src'), { recursive: true });
    await mkdir(file('ignored'), { recursive: true });
    await mkdir(file('node_modules/dep'), { recursive: true });
    await writeFile(file('.gitignore'), 'ignored/\n');
    await writeFile(file('src/a.ts'), 'const needle = 1;\nconst other = 2;\n\tNeedle again; needle twice\n');
    await writeFile(file('src/b.ts'), `${'x'.repeat(2000)}needle${'y'.repeat(2000)}\n`);
    await writeFile(file('src/bin.dat'), Buffer.concat([Buffer.from('needle'), Buffer.from([0, 1, 2])]));
    await writeFile(file('ignored/c.ts'), 'needle\n');
    await writeFile(file('node_modules/dep/d.ts'), 'needle\n');
    await writeFile(file('src/crlf.txt'), 'first\r\nthe needle\r\n');
  });

  it('finds literal matches with path, line, column and preview, skipping binaries and ignored dirs', async () => {
    const outcome = await harness.call('file_search', { query: 'needle' });
    const output = outcome.output as { matches: unknown[]; filesSkipped: number; truncated: boolean };
    expect(output.matches).toEqual([
      { path: 'src/a.ts', line: 1, column: 7, preview: 'const needle = 1;' },
      { path: 'src/a.ts', line: 3, column: 16, preview: '\tNeedle again; needle twice' },
      expect.objectContaining({ path: 'src/b.ts', line: 1, column: 2001 }),
      { path: 'src/crlf.txt', line: 2, column: 5, preview: 'the needle' },
    ]);
    expect(output.filesSkipped).toBe(1);
    expect(output.truncated).toBe(false);
  });

  it('cuts long lines around the match', async () => {
    const outcome = await harness.call('file_search', { query: 'needle', path: 'src/b.ts', maxLineLength: 40 });
    const preview = (outcome.output as { matches: { preview: string }[] }).matches[0]?.preview ?? '';
    expect(preview).toContain('needle');
    expect(preview.startsWith('…')).toBe(true);
    expect(preview.endsWith('…')).toBe(true);
    expect(preview.length).toBeLessThanOrEqual(42);
  });

  it('supports regex, case-insensitivity, include patterns, gitignore off and caps', async () => {
    const regex = (await harness.call('file_search', { query: 'const \\w+ = \\d', regex: true })).output as {
      matches: unknown[];
    };
    expect(regex.matches).toHaveLength(2);
    const insensitive = (await harness.call('file_search', { query: 'NEEDLE', caseSensitive: false, include: '*.ts' }))
      .output as {
      matches: { path: string; line: number }[];
    };
    expect(insensitive.matches.map((match) => `${match.path}:${match.line}`)).toEqual([
      'src/a.ts:1',
      'src/a.ts:3',
      'src/b.ts:1',
    ]);
    const all = (await harness.call('file_search', { query: 'needle', gitignore: false })).output as {
      matches: { path: string }[];
    };
    expect(all.matches.map((match) => match.path)).toContain('ignored/c.ts');
    expect(all.matches.map((match) => match.path)).toContain('node_modules/dep/d.ts');
    const capped = (await harness.call('file_search', { query: 'needle', maxResults: 1 })).output;
    expect(capped).toMatchObject({
      truncated: true,
      matches: [expect.objectContaining({ path: 'src/a.ts', line: 1 })],
    });
  });

  it('rejects an invalid regular expression with E202', async () => {
    const outcome = await harness.call('file_search', { query: '(unclosed', regex: true });
    expect(outcome.error?.code).toBe('E202');
  });
});

describe('WorkspaceSandbox', () => {
  it('refuses a workspace that does not exist with E601', async () => {
    const sandbox = new WorkspaceSandbox({ root: path.join(harness.base, 'missing') });
    await expect(sandbox.resolve('a.txt')).rejects.toMatchObject({ code: 'E601' });
  });

  it('returns real paths and workspace-relative POSIX paths', async () => {
    await mkdir(file('a/b'), { recursive: true });
    await symlink('a/b', file('ab'));
    const sandbox = new WorkspaceSandbox({ root: harness.workspace });
    const resolved = await sandbox.resolve('ab/new.txt', { access: 'write' });
    expect(resolved).toEqual({
      input: 'ab/new.txt',
      absolute: path.join(harness.workspace, 'a', 'b', 'new.txt'),
      relative: 'a/b/new.txt',
      exists: false,
    });
  });
});
