import { StepwiseError } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { validateMcpOptions } from './mcp-options.js';

function problem(value: unknown, location = '/plugins/0'): { code: string; location: string | undefined } {
  try {
    validateMcpOptions(value, location);
  } catch (error) {
    if (!StepwiseError.isInstance(error)) throw error;
    return { code: error.code, location: error.location };
  }
  throw new Error('expected a problem');
}

describe('validateMcpOptions', () => {
  it('accepts stdio and HTTP options', () => {
    const stdio = {
      command: 'node',
      args: ['server.js'],
      env: { A: 'b' },
      envAllow: ['GITHUB_*'],
      effects: { x: 'read' },
    };
    expect(validateMcpOptions(stdio)).toBe(stdio);
    expect(validateMcpOptions({ url: 'https://example.com/mcp', headers: { Authorization: 'x' } })).toBeTruthy();
  });

  it('reports each problem as E601 with a JSON path', () => {
    expect(problem(null)).toEqual({ code: 'E601', location: '/plugins/0' });
    expect(problem({})).toEqual({ code: 'E601', location: '/plugins/0' });
    expect(problem({ command: 'a', url: 'http://b' })).toEqual({ code: 'E601', location: '/plugins/0' });
    expect(problem({ command: '' })).toEqual({ code: 'E601', location: '/plugins/0/command' });
    expect(problem({ command: 'a', args: ['ok', 3] })).toEqual({ code: 'E601', location: '/plugins/0/args/1' });
    expect(problem({ command: 'a', env: { TOKEN: 1 } })).toEqual({ code: 'E601', location: '/plugins/0/env/TOKEN' });
    expect(problem({ command: 'a', headers: {} })).toEqual({ code: 'E601', location: '/plugins/0/headers' });
    expect(problem({ url: 'ftp://x' })).toEqual({ code: 'E601', location: '/plugins/0/url' });
    expect(problem({ url: 'not a url' })).toEqual({ code: 'E601', location: '/plugins/0/url' });
    expect(problem({ url: 'http://x', effects: { 'a/b': 'delete' } })).toEqual({
      code: 'E601',
      location: '/plugins/0/effects/a~1b',
    });
    expect(problem({ command: 'a', timeoutMs: -1 })).toEqual({ code: 'E601', location: '/plugins/0/timeoutMs' });
    expect(problem({ command: 'a', maxRestarts: 1.5 })).toEqual({ code: 'E601', location: '/plugins/0/maxRestarts' });
    expect(problem({ command: 'a', knownTools: [{ name: 'x' }] })).toEqual({
      code: 'E601',
      location: '/plugins/0/knownTools/0',
    });
  });

  it('checks the sandbox mode and options of a stdio server', () => {
    const sandboxed = {
      command: 'node',
      sandbox: 'required',
      sandboxOptions: {
        workspace: 'data',
        writablePaths: ['/srv/cache'],
        allowHosts: ['api.example.com', '*.github.com:443'],
      },
    };
    expect(validateMcpOptions(sandboxed)).toBe(sandboxed);
    expect(problem({ command: 'a', sandbox: 'strict' })).toEqual({ code: 'E601', location: '/plugins/0/sandbox' });
    expect(problem({ command: 'a', sandboxOptions: [] })).toEqual({
      code: 'E601',
      location: '/plugins/0/sandboxOptions',
    });
    expect(problem({ command: 'a', sandboxOptions: { net: true } })).toEqual({
      code: 'E601',
      location: '/plugins/0/sandboxOptions/net',
    });
    expect(problem({ command: 'a', sandboxOptions: { network: 'yes' } })).toEqual({
      code: 'E601',
      location: '/plugins/0/sandboxOptions/network',
    });
    expect(problem({ command: 'a', sandboxOptions: { readablePaths: ['/ok', 1] } })).toEqual({
      code: 'E601',
      location: '/plugins/0/sandboxOptions/readablePaths/1',
    });
    expect(problem({ command: 'a', sandboxOptions: { allowHosts: ['ok.example', 'bad host'] } })).toEqual({
      code: 'E601',
      location: '/plugins/0/sandboxOptions/allowHosts/1',
    });
    expect(problem({ command: 'a', sandboxOptions: { network: true, allowHosts: ['ok.example'] } })).toEqual({
      code: 'E601',
      location: '/plugins/0/sandboxOptions/allowHosts',
    });
    // A remote server runs elsewhere: there is nothing to sandbox.
    expect(problem({ url: 'http://x', sandbox: 'required' })).toEqual({ code: 'E601', location: '/plugins/0/sandbox' });
  });
});
