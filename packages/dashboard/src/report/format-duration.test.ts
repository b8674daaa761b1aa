import { describe, expect, it } from 'vitest';
import { formatDuration } from './format-duration.js';

describe('formatDuration', () => {
  it.each([
    [undefined, ''],
    [-3, '0ms'],
    [0, '0ms'],
    [12.4, '12ms'],
    [999.4, '999ms'],
    [1234, '1.2s'],
    [12_345, '12.3s'],
    [59_940, '59.9s'],
    [61_000, '1m 01s'],
    [3_599_000, '59m 59s'],
  ])('%s ms → %j', (milliseconds, expected) => {
    expect(formatDuration(milliseconds)).toBe(expected);
  });

  it('runs from its own source text, as the report embeds it', () => {
    const embedded = new Function(`return (${formatDuration.toString()})`)() as typeof formatDuration;
    expect(embedded(61_000)).toBe('1m 01s');
    expect(embedded(1234)).toBe('1.2s');
  });
});
