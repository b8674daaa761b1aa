import { describe, expect, it } from 'vitest';
import { closestName, didYouMean } from './did-you-mean.js';

const tools = ['file_read', 'file_write', 'file_delete', 'run_command', 'dir_list'];

describe('closestName', () => {
  it.each([
    ['file_raed', 'file_read'],
    ['file_reed', 'file_read'],
    ['File_Read', 'file_read'],
    ['run_comand', 'run_command'],
    ['dirlist', 'dir_list'],
  ])('%s → %s', (word, expected) => {
    expect(closestName(word, tools)).toBe(expected);
  });

  it('suggests nothing when no name is close', () => {
    expect(closestName('deploy', tools)).toBeUndefined();
    expect(closestName('x', tools)).toBeUndefined();
  });

  it('prefers the nearest of several candidates', () => {
    expect(closestName('dependOn', ['dependsOn', 'description', 'id'])).toBe('dependsOn');
  });
});

describe('didYouMean', () => {
  it('phrases a suggestion or nothing', () => {
    expect(didYouMean('file_raed', tools)).toBe('; did you mean "file_read"?');
    expect(didYouMean('deploy', tools)).toBe('');
  });
});
