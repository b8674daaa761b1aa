import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unifiedDiff } from './unified-diff.js';

/** Applies a unified diff produced for `before`; the test's oracle. */
function applyDiff(before: string, diff: string): string {
  const lines = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const output: string[] = [];
  let cursor = 0;
  const patch = diff.split('\n').slice(2);
  for (let index = 0; index < patch.length; index++) {
    const header = /^@@ -(\d+),(\d+) \+\d+,\d+ @@$/.exec(patch[index] as string);
    if (!header) continue;
    const oldStart = Number(header[2]) === 0 ? Number(header[1]) : Number(header[1]) - 1;
    while (cursor < oldStart) output.push(lines[cursor++] as string);
    for (index += 1; index < patch.length && !(patch[index] as string).startsWith('@@'); index++) {
      const line = patch[index] as string;
      if (line === '') continue;
      if (line[0] === ' ') {
        expect(lines[cursor]).toBe(line.slice(1));
        output.push(lines[cursor++] as string);
      } else if (line[0] === '-') {
        expect(lines[cursor]).toBe(line.slice(1));
        cursor += 1;
      } else if (line[0] === '+') output.push(line.slice(1));
    }
    index -= 1;
  }
  while (cursor < lines.length) output.push(lines[cursor++] as string);
  return output.length === 0 ? '' : `${output.join('\n')}\n`;
}

describe('unifiedDiff', () => {
  it('is empty for equal texts', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n')).toBe('');
  });

  it('shows a one-line change with context in the diff -u format', () => {
    const before = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n';
    const after = 'one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n';
    expect(unifiedDiff(before, after, { path: 'x.txt' })).toBe(
      '--- a/x.txt\n+++ b/x.txt\n@@ -1,7 +1,7 @@\n one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n',
    );
  });

  it('diffs a new file against nothing', () => {
    expect(unifiedDiff('', 'hello\nworld\n', { path: 'new.txt' })).toBe(
      '--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n',
    );
  });

  it('splits distant changes into separate hunks', () => {
    const before = Array.from({ length: 30 }, (_, index) => `line ${index}`).join('\n');
    const after = before.replace('line 2\n', 'changed 2\n').replace('line 25\n', 'changed 25\n');
    const diff = unifiedDiff(`${before}\n`, `${after}\n`);
    expect(diff.match(/^@@/gm)).toHaveLength(2);
  });

  it('round-trips: applying the diff to before gives after (property)', () => {
    const text = fc
      .array(fc.constantFrom('a', 'b', 'c', 'd', ''), { maxLength: 40 })
      .map((lines) => (lines.length === 0 ? '' : `${lines.join('\n')}\n`));
    fc.assert(
      fc.property(text, text, (before, after) => {
        const diff = unifiedDiff(before, after);
        if (before === after) return diff === '';
        return applyDiff(before, diff) === after;
      }),
      { numRuns: 400 },
    );
  });
});
