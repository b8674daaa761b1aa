import { describe, expect, it } from 'vitest';
import { splitCommand } from './split-command.js';

describe('splitCommand', () => {
  it('splits words like a shell, keeping quoted arguments whole', () => {
    expect(splitCommand(`python -m pytest -q -k 'not slow'`, '--validate')).toEqual([
      'python',
      '-m',
      'pytest',
      '-q',
      '-k',
      'not slow',
    ]);
    expect(splitCommand(`npm run "test:unit" -- --grep "a \\"b\\""`, '--validate')).toEqual([
      'npm',
      'run',
      'test:unit',
      '--',
      '--grep',
      'a "b"',
    ]);
    expect(splitCommand(`echo a\\ b ''`, '--validate')).toEqual(['echo', 'a b', '']);
  });

  it('takes a JSON argv as it is', () => {
    expect(splitCommand('["node", "--test", "a b"]', '--validate')).toEqual(['node', '--test', 'a b']);
  });

  it('refuses an unterminated quote and a JSON value that is not an argv', () => {
    expect(() => splitCommand(`npm test 'oops`, '--validate')).toThrow(/unterminated/);
    expect(() => splitCommand('[1, 2]', '--validate')).toThrow(/array of non-empty strings/);
  });
});
