import { describe, expect, it } from 'vitest';
import { alignColumns, createPalette, fitWidth, padEnd, stripAnsi, textWidth } from './terminal.js';

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

// Display widths as a terminal lays them out: wide East Asian characters and emoji take two
// columns, combining marks and escape sequences none.
const WIDE = '日本語のゴール'; // 7 characters, 14 columns
const FAMILY = '👨‍👩‍👧‍👦'; // four emoji joined by ZWJ: one glyph, 2 columns, 11 UTF-16 units
const HEART = '❤️'; // U+2764 with the emoji variation selector: 2 columns
const COMBINED = 'cafe\u0301'; // "café" with a combining acute accent: 4 columns
const palette = createPalette({ isTTY: true }, {});

describe('textWidth', () => {
  it.each([
    [WIDE, 14],
    [FAMILY, 2],
    [HEART, 2],
    [COMBINED, 4],
    [palette.red(WIDE), 14],
    [palette.bold(`${FAMILY} ${COMBINED}`), 7],
    ['\u001b]8;;file:///tmp\u0007link\u001b]8;;\u0007', 4],
    ['plain ascii', 11],
  ])('measures %j as %i columns', (text, width) => {
    expect(textWidth(text)).toBe(width);
  });
});

describe('fitWidth', () => {
  it('never leaves wide characters, emoji or combining marks wider than the width', () => {
    const texts = [WIDE.repeat(3), `${FAMILY}${HEART}`.repeat(4), `a${WIDE}b${FAMILY}c${COMBINED}`, palette.gray(WIDE)];
    for (const text of texts) {
      for (let width = 1; width <= textWidth(text) + 1; width += 1) {
        const fitted = fitWidth(text, width);
        expect(textWidth(fitted), `${JSON.stringify(text)} in ${width}`).toBeLessThanOrEqual(width);
        // Cut text keeps at least all but one wide character's worth of room.
        if (textWidth(text) > width) expect(textWidth(fitted)).toBeGreaterThanOrEqual(width - 2);
        else expect(fitted).toBe(text);
      }
    }
  });

  it('cuts between graphemes, never inside a joined emoji or before a combining mark', () => {
    expect(stripAnsi(fitWidth(`ab${FAMILY}cd`, 5))).toBe(`ab${FAMILY}…`);
    expect(stripAnsi(fitWidth(`ab${FAMILY}cd`, 4))).toBe('ab…');
    expect(stripAnsi(fitWidth(`${COMBINED}${COMBINED}`, 5))).toBe('cafe\u0301…');
    expect(stripAnsi(fitWidth(WIDE, 6))).toBe('日本…');
  });

  it('keeps colours, closes the ones the cut leaves open, and does not count them', () => {
    const fitted = fitWidth(`${palette.bold('stepwise')} ${palette.gray(WIDE)}`, 14);
    expect(stripAnsi(fitted)).toBe('stepwise 日本…');
    expect(fitted.startsWith('\u001b[1mstepwise\u001b[22m \u001b[90m日本…')).toBe(true);
    expect(fitted.endsWith('\u001b[39m')).toBe(true);
  });
});

describe('padEnd and alignColumns with wide characters', () => {
  it('pads to columns, not to UTF-16 units', () => {
    expect(padEnd('日本', 6)).toBe('日本  ');
    expect(padEnd(FAMILY, 4)).toBe(`${FAMILY}  `);
    expect(padEnd(palette.cyan(COMBINED), 6)).toBe(`${palette.cyan(COMBINED)}  `);
  });

  it('lines up the column after cells of wide characters, emoji and combining marks', () => {
    const lines = alignColumns([
      ['ascii', 'next'],
      [WIDE, 'next'],
      [`${FAMILY}${HEART}`, 'next'],
      [palette.green(COMBINED), 'next'],
    ]);
    const starts = lines.map((line) => textWidth(line.slice(0, line.lastIndexOf('next'))));
    expect(starts).toEqual([16, 16, 16, 16]);
  });
});
