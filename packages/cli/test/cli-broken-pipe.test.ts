import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cliEnvironment, useCliWorkspace } from './helpers.js';

const step = (id: string, script: string, dependsOn?: string) => ({
  id,
  tool: 'run_command',
  args: { command: ['node', script] },
  ...(dependsOn ? { dependsOn: [dependsOn] } : {}),
});

describe('stepwise run --json | head: the reader goes away', () => {
  const cli = useCliWorkspace({ approvals: { exec: 'auto' } });

  it('finishes the run, journals it whole and exits with its code (no EPIPE crash)', async () => {
    await cli.write('wait.mjs', 'await new Promise((resolve) => setTimeout(resolve, 300));\n');
    await cli.write('fail.mjs', 'process.exit(1);\n');
    // Events keep coming for about a second after head has taken the first line and exited.
    await cli.write('slow.json', {
      id: 'slow',
      steps: [
        step('a', 'wait.mjs'),
        step('b', 'wait.mjs', 'a'),
        step('c', 'wait.mjs', 'b'),
        step('d', 'fail.mjs', 'c'),
      ],
    });
    const errors = path.join(cli.directory, 'stderr.txt');
    // A real pipe, as a shell makes it; PIPESTATUS[0] is stepwise's own exit code.
    const pipeline = spawnSync(
      'bash',
      [
        '-c',
        `'${process.execPath}' '${BIN}' run slow.json --json 2>'${errors}' | head -n 1; echo "exit=\${PIPESTATUS[0]}"`,
      ],
      { cwd: cli.directory, env: cliEnvironment(), encoding: 'utf8', timeout: 60_000 },
    );
    const [firstLine, exitLine] = pipeline.stdout.trim().split('\n');
    expect(JSON.parse(firstLine as string)).toMatchObject({ type: 'run-start' });
    const stderr = await readFile(errors, 'utf8');
    expect(stderr).not.toMatch(/EPIPE|Unhandled|at .*\(node:/);
    // The summary still reaches stderr, which stayed open; the exit code is the failed step's.
    expect(stderr).toMatch(/^stepwise: run run_\w+ (failed|partial) in .* \(3 succeeded, 1 failed\); exit 30$/m);
    expect(exitLine).toBe('exit=30');

    const runs = await cli.stepwise(['runs', '--json']);
    const slow = (JSON.parse(runs.stdout) as { planId: string; status: string }[]).find((run) => run.planId === 'slow');
    expect(slow?.status).toMatch(/^(failed|partial)$/);
  });
});
