import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cliEnvironment, FIXTURES, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace({
  plugins: [path.join(FIXTURES, 'test-plugin.mjs'), path.join(FIXTURES, 'failing-plugin.mjs')],
});

// util-linux's script(1) runs a command in a pseudo-terminal.
const scriptAvailable = spawnSync('script', ['--version']).status === 0;

const LONG = `${'x'.repeat(300)}END`;

/** One failing step, one denied (exec, nobody to ask), one long multi-line failure, one that succeeds. */
const plan = {
  id: 'summary',
  steps: [
    {
      id: 'boom',
      tool: 'fail_with',
      critical: false,
      args: { message: 'the build broke\nstack line 1\nstack line 2' },
    },
    { id: 'ship', tool: 'deploy', critical: false, args: { target: 'prod' } },
    { id: 'long', tool: 'fail_with', critical: false, args: { message: LONG } },
    { id: 'fine', tool: 'sleep_ms', args: { ms: 1 } },
    { id: 'after-boom', tool: 'sleep_ms', args: { ms: 1 }, dependsOn: ['boom'] },
  ],
};

describe('the run summary names each failed step', () => {
  it('on stderr beside JSONL: id, tool, error code and first line of the message, cut to length', async () => {
    await cli.write('summary.json', plan);
    const outcome = await cli.stepwise(['run', 'summary.json', '--json']);
    expect([30, 33]).toContain(outcome.code);
    const lines = outcome.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^stepwise: run run_\w+ partial in \S+ \(2 failed, 1 denied, 1 succeeded, 1 skipped\); exit 3[03]$/,
    );
    expect(lines).toContain('stepwise:   boom (fail_with): E300 the build broke …');
    expect(lines.some((line) => /^stepwise: {3}ship \(deploy\): E401 /.test(line))).toBe(true);
    const long = lines.find((line) => line.startsWith('stepwise:   long (fail_with): E300 '));
    expect(long).toBeDefined();
    expect(long?.endsWith('…')).toBe(true);
    expect(long).not.toContain('END');
    expect([...(long ?? '')].length).toBeLessThan(260);
    // Neither the step that succeeded nor the one skipped after a failure is named; stdout stays JSONL.
    expect(outcome.stderr).not.toContain('fine');
    expect(outcome.stderr).not.toContain('after-boom');
    expect(lines).toHaveLength(4);
    for (const line of outcome.stdout.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('names at most ten steps and counts the rest', async () => {
    const many = {
      id: 'many',
      steps: Array.from({ length: 12 }, (_, index) => ({
        id: `fail-${index + 1}`,
        tool: 'fail_with',
        critical: false,
        args: { message: `failure ${index + 1}` },
      })),
    };
    await cli.write('many.json', many);
    const outcome = await cli.stepwise(['run', 'many.json', '--json']);
    expect(outcome.code).toBe(30);
    const lines = outcome.stderr.trimEnd().split('\n');
    const named = lines.filter((line) => /^stepwise: {3}fail-\d+ \(fail_with\): E300 failure \d+$/.test(line));
    expect(named).toHaveLength(10);
    expect(lines.at(-1)).toMatch(/^stepwise: {3}… and 2 more failed steps: stepwise show run_\w+$/);
  });

  it.skipIf(!scriptAvailable)('in a terminal, with the same line per failed step', async () => {
    await cli.write('summary.json', plan);
    // `script` gives the CLI a pseudo-terminal for stdout and stdin, so the live view and its summary show.
    const outcome = spawnSync(
      'script',
      ['-qec', `'${process.execPath}' '${BIN}' run summary.json --approve deny`, '/dev/null'],
      { cwd: cli.directory, env: cliEnvironment(), encoding: 'utf8', timeout: 45_000, input: '' },
    );
    expect([30, 33], outcome.stdout).toContain(outcome.status);
    const screen = outcome.stdout.replace(/\r/g, '');
    expect(screen).toMatch(/✗ partial in \S+ — /);
    expect(screen).toContain('\n  boom (fail_with): E300 the build broke …\n');
    expect(screen).toMatch(/\n {2}ship \(deploy\): E401 /);
    expect(screen).toMatch(/\n {2}long \(fail_with\): E300 x+…\n/);
  });
});
