import { describe, expect, it } from 'vitest';
import { alignColumns, createPalette, stripAnsi } from './terminal.js';

describe('alignColumns', () => {
  it('measures each column from its widest cell, escapes not counted', () => {
    const palette = createPalette({ isTTY: true }, {});
    const lines = alignColumns(
      [
        ['a', palette.cyan('file_read'), palette.green('succeeded'), '12ms'],
        ['a-much-longer-step-id', palette.cyan('github_create_pull_request_review'), palette.red('failed'), '1.2s'],
      ],
      '  ',
    );
    const plain = lines.map(stripAnsi);
    expect(plain[0]).toBe('  a                      file_read                          succeeded  12ms');
    expect(plain[1]).toBe('  a-much-longer-step-id  github_create_pull_request_review  failed     1.2s');
  });

  it('does not pad the last column and drops trailing space of empty cells', () => {
    expect(
      alignColumns([
        ['x', ''],
        ['longer', 'tail'],
      ]),
    ).toEqual(['x', 'longer  tail']);
  });
});
