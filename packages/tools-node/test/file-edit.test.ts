import { constants, writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FileSystem, nodeFileSystem } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

let harness: Harness;
const file = (name: string) => path.join(harness.workspace, name);

beforeEach(async () => {
  harness = await createHarness();
});

afterEach(async () => {
  await harness.cleanup();
});

/** Every file under a directory, so tests can prove no temporary file was left behind. */
async function allFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true });
  return entries.map(String).sort();
}

describe('file_edit exact-once rule', () => {
  it('replaces a unique match and returns a unified diff', async () => {
    await writeFile(file('a.ts'), 'const a = 1;\nconst b = 2;\nconst c = 3;\n');
    const outcome = await harness.call('file_edit', {
      path: 'a.ts',
      edits: [{ search: 'const b = 2;', replace: 'const b = 20;' }],
    });
    expect(outcome.status).toBe('succeeded');
    expect(await readFile(file('a.ts'), 'utf8')).toBe('const a = 1;\nconst b = 20;\nconst c = 3;\n');
    const output = outcome.output as { diff: string; files: unknown[] };
    expect(output.diff).toBe(
      '--- a/a.ts\n+++ b/a.ts\n@@ -1,3 +1,3 @@\n const a = 1;\n-const b = 2;\n+const b = 20;\n const c = 3;\n',
    );
    expect(output.files).toEqual([{ path: 'a.ts', edits: 1, changed: true }]);
  });

  it('applies several edits to one file in order', async () => {
    await writeFile(file('a.txt'), 'one\ntwo\nthree\n');
    const outcome = await harness.call('file_edit', {
      path: 'a.txt',
      edits: [
        { search: 'two', replace: 'TWO' },
        { search: 'TWO\nthree', replace: 'TWO\nTHREE' },
        { search: 'one\n', replace: '' },
      ],
    });
    expect(outcome.status).toBe('succeeded');
    expect(await readFile(file('a.txt'), 'utf8')).toBe('TWO\nTHREE\n');
  });

  it('refuses zero matches with the closest lines, changing nothing', async () => {
    const text = 'function add(a, b) {\n  return a + b;\n}\n\nfunction subtract(a, b) {\n  return a - b;\n}\n';
    await writeFile(file('math.js'), text);
    const outcome = await harness.call('file_edit', {
      path: 'math.js',
      edits: [{ search: 'function subtract(a, b) {\n  return a - c;\n}', replace: 'x' }],
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('not found');
    expect(outcome.error?.message).toContain('5| function subtract(a, b) {');
    expect(outcome.error?.message).toContain('6|   return a - b;');
    const problem = (outcome.error?.details?.problems as { closest: { startLine: number } }[] | undefined)?.[0];
    expect(problem?.closest.startLine).toBe(5);
    expect(await readFile(file('math.js'), 'utf8')).toBe(text);
  });

  it('says when the search text only differs in whitespace', async () => {
    await writeFile(file('w.py'), 'def f():\n\treturn 1\n');
    const outcome = await harness.call('file_edit', {
      path: 'w.py',
      edits: [{ search: 'def f():\n    return 1', replace: 'x' }],
    });
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('if whitespace is ignored');
    expect(outcome.error?.message).toContain('line 1');
  });

  it('refuses several matches and names every line', async () => {
    await writeFile(file('dup.txt'), 'x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n');
    const outcome = await harness.call('file_edit', {
      path: 'dup.txt',
      edits: [{ search: 'x = 1', replace: 'x = 9' }],
    });
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('matches 3 times');
    expect(outcome.error?.message).toContain('lines 1, 3, 5');
    expect((outcome.error?.details?.problems as { lines: number[] }[] | undefined)?.[0]?.lines).toEqual([1, 3, 5]);
    expect(await readFile(file('dup.txt'), 'utf8')).toBe('x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n');
  });

  it('reports every problem across files and changes none of them', async () => {
    await writeFile(file('a.txt'), 'alpha\n');
    await writeFile(file('b.txt'), 'beta beta\n');
    await writeFile(file('c.txt'), 'gamma\n');
    const outcome = await harness.call('file_edit', {
      edits: [
        { path: 'a.txt', search: 'alpha', replace: 'ALPHA' },
        { path: 'b.txt', search: 'beta', replace: 'BETA' },
        { path: 'c.txt', search: 'delta', replace: 'DELTA' },
      ],
    });
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('2 edits did not apply; nothing was changed');
    expect(await readFile(file('a.txt'), 'utf8')).toBe('alpha\n');
  });

  it('needs a path for every edit', async () => {
    const outcome = await harness.call('file_edit', { edits: [{ search: 'a', replace: 'b' }] });
    expect(outcome.error?.code).toBe('E202');
  });

  it('refuses an empty search text at the schema', async () => {
    await writeFile(file('a.txt'), 'x');
    const outcome = await harness.call('file_edit', { path: 'a.txt', edits: [{ search: '', replace: 'b' }] });
    expect(outcome.error?.code).toBe('E202');
  });

  it('refuses binary files', async () => {
    await writeFile(file('bin.dat'), Buffer.from([0x61, 0x00, 0x62]));
    const outcome = await harness.call('file_edit', { path: 'bin.dat', edits: [{ search: 'a', replace: 'b' }] });
    expect(outcome.error?.code).toBe('E300');
    expect(outcome.error?.message).toContain('not UTF-8 text');
  });

  it('does not write in a dry run', async () => {
    await writeFile(file('a.txt'), 'keep\n');
    const outcome = await harness.call('file_edit', {
      path: 'a.txt',
      dryRun: true,
      edits: [{ search: 'keep', replace: 'drop' }],
    });
    expect((outcome.output as { diff: string }).diff).toContain('+drop');
    expect(await readFile(file('a.txt'), 'utf8')).toBe('keep\n');
  });

  it('treats two spellings of one file as one file', async () => {
    await writeFile(file('a.txt'), 'one two\n');
    const outcome = await harness.call('file_edit', {
      edits: [
        { path: 'a.txt', search: 'one', replace: '1' },
        { path: './a.txt', search: 'two', replace: '2' },
      ],
    });
    expect(outcome.status).toBe('succeeded');
    expect(await readFile(file('a.txt'), 'utf8')).toBe('1 2\n');
  });
});

describe('file_edit whitespace preservation', () => {
  it('keeps CRLF line endings when the edit is written with LF', async () => {
    await writeFile(file('win.txt'), 'first\r\nsecond\r\nthird\r\n');
    const outcome = await harness.call('file_edit', {
      path: 'win.txt',
      edits: [{ search: 'first\nsecond', replace: 'FIRST\nSECOND\nINSERTED' }],
    });
    expect(outcome.status).toBe('succeeded');
    expect(await readFile(file('win.txt'), 'utf8')).toBe('FIRST\r\nSECOND\r\nINSERTED\r\nthird\r\n');
  });

  it('keeps tabs, a missing trailing newline and a BOM byte for byte', async () => {
    const before = '\uFEFFfunction f() {\n\tif (x) {\n\t\treturn 1;\t// tab comment\n\t}\n}';
    await writeFile(file('tabs.js'), before);
    const outcome = await harness.call('file_edit', {
      path: 'tabs.js',
      edits: [{ search: 'return 1;', replace: 'return 2;' }],
    });
    expect(outcome.status).toBe('succeeded');
    const after = await readFile(file('tabs.js'));
    expect(after.equals(Buffer.from(before.replace('return 1;', 'return 2;'), 'utf8'))).toBe(true);
    expect(after.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))).toBe(true);
    expect(after.at(-1)).toBe('}'.charCodeAt(0));
    expect((outcome.output as { diff: string }).diff).toContain('\\ No newline at end of file');
  });

  it('keeps trailing newlines and blank lines exactly', async () => {
    await writeFile(file('nl.txt'), 'a\n\n\nb\n\n');
    await harness.call('file_edit', { path: 'nl.txt', edits: [{ search: 'b', replace: 'B' }] });
    expect(await readFile(file('nl.txt'), 'utf8')).toBe('a\n\n\nB\n\n');
  });

  it('keeps mixed line endings as they are', async () => {
    await writeFile(file('mixed.txt'), 'a\r\nb\nc\r\n');
    await harness.call('file_edit', { path: 'mixed.txt', edits: [{ search: 'b\n', replace: 'B\n' }] });
    expect(await readFile(file('mixed.txt'), 'utf8')).toBe('a\r\nB\nc\r\n');
  });

  it('keeps the file mode', async () => {
    await writeFile(file('run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await harness.call('file_edit', { path: 'run.sh', edits: [{ search: 'hi', replace: 'bye' }] });
    expect((await fs.stat(file('run.sh'))).mode & 0o777).toBe(0o755);
  });
});

describe('file_edit large files', () => {
  it('edits a 5 MB file in the middle with a small, correct diff that file_patch can apply', async () => {
    const lines: string[] = [];
    for (let index = 1; index <= 100_000; index++) lines.push(`line ${index}: ${'lorem ipsum '.repeat(3)}`);
    const before = `${lines.join('\n')}\n`;
    expect(before.length).toBeGreaterThan(4_500_000);
    await writeFile(file('big.txt'), before);
    await writeFile(file('copy.txt'), before);
    const outcome = await harness.call('file_edit', {
      path: 'big.txt',
      edits: [
        { search: 'line 50000: ', replace: 'line 50000 (edited): ' },
        { search: 'line 99999: ', replace: 'line 99999 (edited): ' },
      ],
    });
    expect(outcome.status).toBe('succeeded');
    const after = await readFile(file('big.txt'), 'utf8');
    expect(after).toBe(
      before.replace('line 50000: ', 'line 50000 (edited): ').replace('line 99999: ', 'line 99999 (edited): '),
    );
    const diff = (outcome.output as { diff: string }).diff;
    expect(diff).toContain('@@ -49997,7 +49997,7 @@');
    expect(diff).toContain('@@ -99996,5 +99996,5 @@');
    expect(diff.length).toBeLessThan(2000);
    const patched = await harness.call('file_patch', {
      patch: diff.replaceAll('a/big.txt', 'a/copy.txt').replaceAll('b/big.txt', 'b/copy.txt'),
    });
    expect(patched.status).toBe('succeeded');
    expect(await readFile(file('copy.txt'), 'utf8')).toBe(after);
  }, 30_000);

  it('finds the closest lines in a large file quickly enough to be useful', async () => {
    const lines: string[] = [];
    for (let index = 1; index <= 50_000; index++) lines.push(`value_${index} = compute(${index})`);
    await writeFile(file('many.py'), `${lines.join('\n')}\n`);
    const outcome = await harness.call('file_edit', {
      path: 'many.py',
      edits: [{ search: 'value_31337 = compute(31338)', replace: 'x' }],
    });
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('31337| value_31337 = compute(31337)');
  }, 30_000);
});

/** Wraps the real file system; `fail` decides per call whether to throw EIO. */
function failingFileSystem(fail: (operation: 'open' | 'rename', target: string, count: number) => boolean): FileSystem {
  const counts = { open: 0, rename: 0 };
  const eio = (target: string) => Object.assign(new Error(`EIO: injected failure, ${target}`), { code: 'EIO' });
  return {
    ...nodeFileSystem,
    open: (async (target: string, flags?: number, mode?: number) => {
      // Only the exclusive creates of temporary files count: reads stay real.
      if (typeof flags === 'number' && flags & constants.O_EXCL) {
        counts.open++;
        if (fail('open', target, counts.open)) throw eio(target);
      }
      return nodeFileSystem.open(target, flags, mode);
    }) as FileSystem['open'],
    rename: async (from, to) => {
      counts.rename++;
      if (fail('rename', String(to), counts.rename)) throw eio(String(to));
      return nodeFileSystem.rename(from, to);
    },
  };
}

describe('file_edit multi-file atomicity', () => {
  const originals = {
    'one.txt': 'first file\n',
    'sub/two.txt': 'second file\n',
    'sub/deeper/three.txt': 'third file\n',
  };
  const edits = [
    { path: 'one.txt', search: 'first', replace: 'FIRST' },
    { path: 'sub/two.txt', search: 'second', replace: 'SECOND' },
    { path: 'sub/deeper/three.txt', search: 'third', replace: 'THIRD' },
  ];

  async function withFailingHarness(fail: Parameters<typeof failingFileSystem>[0]) {
    await harness.cleanup();
    harness = await createHarness({ fileSystem: failingFileSystem(fail) });
    await mkdir(file('sub/deeper'), { recursive: true });
    for (const [name, text] of Object.entries(originals)) await writeFile(file(name), text);
    return allFiles(harness.workspace);
  }

  async function expectUnchanged(listing: string[]) {
    for (const [name, text] of Object.entries(originals)) expect(await readFile(file(name), 'utf8')).toBe(text);
    expect(await allFiles(harness.workspace)).toEqual(listing);
  }

  it('changes nothing when writing the third temporary file fails', async () => {
    const listing = await withFailingHarness((operation, _target, count) => operation === 'open' && count === 3);
    const outcome = await harness.call('file_edit', { edits });
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.message).toContain('injected failure');
    await expectUnchanged(listing);
  });

  it('rolls back files already replaced when the second rename fails', async () => {
    const listing = await withFailingHarness((operation, _target, count) => operation === 'rename' && count === 2);
    const outcome = await harness.call('file_edit', { edits });
    expect(outcome.status).toBe('failed');
    expect(outcome.error?.code).toBe('E300');
    await expectUnchanged(listing);
  });

  it('rolls back everything when the last rename fails', async () => {
    const listing = await withFailingHarness((operation, _target, count) => operation === 'rename' && count === 3);
    const outcome = await harness.call('file_edit', { edits });
    expect(outcome.status).toBe('failed');
    await expectUnchanged(listing);
  });

  it('applies all three when nothing fails', async () => {
    await withFailingHarness(() => false);
    const outcome = await harness.call('file_edit', { edits });
    expect(outcome.status).toBe('succeeded');
    expect(await readFile(file('sub/deeper/three.txt'), 'utf8')).toBe('THIRD file\n');
    expect((outcome.output as { diff: string }).diff.match(/^--- a\//gm)).toHaveLength(3);
  });

  it('refuses to overwrite a file that changed after it was read', async () => {
    await withFailingHarness((operation, _target, count) => {
      // Someone else writes one.txt while the temporaries are being prepared (the second is sub/two.txt's).
      if (operation === 'open' && count === 2) {
        writeFileSync(file('one.txt'), 'changed by someone else, longer\n');
      }
      return false;
    });
    const outcome = await harness.call('file_edit', { edits });
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('changed while it was being edited');
    expect(await readFile(file('one.txt'), 'utf8')).toBe('changed by someone else, longer\n');
    expect(await readFile(file('sub/two.txt'), 'utf8')).toBe('second file\n');
  });
});

describe('file_patch', () => {
  it('applies a multi-file patch with a create and a delete', async () => {
    await writeFile(file('a.txt'), 'a1\na2\na3\n');
    await writeFile(file('gone.txt'), 'bye\n');
    const patch = [
      'diff --git a/a.txt b/a.txt',
      '--- a/a.txt',
      '+++ b/a.txt',
      '@@ -1,3 +1,3 @@',
      ' a1',
      '-a2',
      '+A2',
      ' a3',
      '--- /dev/null',
      '+++ b/new/made.txt',
      '@@ -0,0 +1,2 @@',
      '+made',
      '+here',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-bye',
      '',
    ].join('\n');
    const outcome = await harness.call('file_patch', { patch });
    expect(outcome.error).toBeUndefined();
    expect(await readFile(file('a.txt'), 'utf8')).toBe('a1\nA2\na3\n');
    expect(await readFile(file('new/made.txt'), 'utf8')).toBe('made\nhere\n');
    await expect(fs.lstat(file('gone.txt'))).rejects.toThrow();
    expect((outcome.output as { files: unknown[] }).files).toEqual([
      { path: 'a.txt', action: 'modify' },
      { path: 'new/made.txt', action: 'create' },
      { path: 'gone.txt', action: 'delete' },
    ]);
  });

  it('changes nothing when a later hunk does not fit, and names the hunk', async () => {
    await writeFile(file('a.txt'), 'a1\na2\na3\n');
    await writeFile(file('b.txt'), 'b1\nb2\n');
    const patch =
      '--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a1\n-a2\n+A2\n a3\n--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n b1\n-bX\n+B2\n';
    const outcome = await harness.call('file_patch', { patch });
    expect(outcome.error?.code).toBe('E308');
    expect(outcome.error?.message).toContain('hunk 1 of 1 (@@ -1,2 +1,2 @@) does not apply to b.txt');
    expect(await readFile(file('a.txt'), 'utf8')).toBe('a1\na2\na3\n');
  });

  it('applies an LF patch to a CRLF file and keeps CRLF', async () => {
    await writeFile(file('win.txt'), 'one\r\ntwo\r\n');
    const outcome = await harness.call('file_patch', {
      patch: '--- a/win.txt\n+++ b/win.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n',
    });
    expect(outcome.error).toBeUndefined();
    expect(await readFile(file('win.txt'), 'utf8')).toBe('one\r\nTWO\r\n');
  });

  it('rolls back a multi-file patch when a write fails', async () => {
    await harness.cleanup();
    harness = await createHarness({
      fileSystem: failingFileSystem((operation, _target, count) => operation === 'rename' && count === 2),
    });
    await writeFile(file('a.txt'), 'a\n');
    await writeFile(file('b.txt'), 'b\n');
    const before = await allFiles(harness.workspace);
    const outcome = await harness.call('file_patch', {
      patch: '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n',
    });
    expect(outcome.status).toBe('failed');
    expect(await readFile(file('a.txt'), 'utf8')).toBe('a\n');
    expect(await readFile(file('b.txt'), 'utf8')).toBe('b\n');
    expect(await allFiles(harness.workspace)).toEqual(before);
  });

  it('refuses a patch without hunks and a rename', async () => {
    expect((await harness.call('file_patch', { patch: 'just text' })).error?.code).toBe('E202');
    await writeFile(file('x.txt'), 'x\n');
    const rename = await harness.call('file_patch', { patch: '--- a/x.txt\n+++ b/y.txt\n@@ -1 +1 @@\n-x\n+y\n' });
    expect(rename.error?.code).toBe('E308');
    expect(rename.error?.message).toContain('renames are not supported');
  });
});
