import { describe, expect, it } from 'vitest';
import { childEnvironment } from './child-environment.js';

describe('childEnvironment', () => {
  const source = {
    PATH: '/usr/bin',
    HOME: '/home/me',
    LC_ALL: 'C',
    AWS_SECRET_ACCESS_KEY: 'secret',
    GITHUB_TOKEN: 'ghp_x',
    GITHUB_HOST: 'github.com',
    OPENAI_API_KEY: 'sk-x',
    BASH_FUNC_x: '() { evil; }',
  };

  it('inherits only allowlisted names', () => {
    expect(childEnvironment({}, [], source)).toEqual({ PATH: '/usr/bin', HOME: '/home/me', LC_ALL: 'C' });
  });

  it('adds names and prefixes the host allows, and explicit values win', () => {
    expect(
      childEnvironment({ HOME: '/sandbox', EXTRA: '1' }, ['GITHUB_*', 'OPENAI_API_KEY', 'BASH_FUNC_x'], source),
    ).toEqual({
      PATH: '/usr/bin',
      HOME: '/sandbox',
      LC_ALL: 'C',
      GITHUB_TOKEN: 'ghp_x',
      GITHUB_HOST: 'github.com',
      OPENAI_API_KEY: 'sk-x',
      EXTRA: '1',
    });
  });
});
