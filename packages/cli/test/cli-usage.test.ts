import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWorkspace, inProcess, parseJsonLines, runCli, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

describe('usage', () => {
  it('prints help for the tool and for every command', async () => {
    const top = await cli.stepwise(['--help']);
    expect(top.code).toBe(0);
    const run = await cli.stepwise(['run', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: stepwise run/);
    // The other commands' help, in-process (the same code path without the process start-up).
    for (const command of ['run', 'resume', 'validate', 'approve', 'runs', 'show', 'report', 'graph']) {
      expect(top.stdout).toContain(`  ${command} `);
      const help = await inProcess([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: stepwise ${command}`));
      expect(help.stdout).toContain('Examples:');
    }
  });

  it('gives one clear line and exit 2 for unknown flags, missing files and unknown commands', async () => {
    const unknownFlag = await cli.stepwise(['run', 'plan.json', '--bogus']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknownFlag.stderr).toContain("'--bogus'");
    const missing = await cli.stepwise(['run', 'nowhere.json']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe('stepwise run: E004 plan not found: nowhere.json');
    const command = await cli.stepwise(['frobnicate']);
    expect(command.code).toBe(2);
    expect(command.stderr.trim().split('\n')).toHaveLength(1);
    const badChoice = await cli.stepwise(['graph', 'plan.json', '--format', 'png']);
    expect(badChoice.code).toBe(2);
    expect(badChoice.stderr).toContain('--format must be one of mermaid, dot');
  });
});

describe('validate', () => {
  it('accepts a good plan', async () => {
    await cli.write('good.json', {
      id: 'good',
      steps: [
        { id: 'read', tool: 'file_read', args: { path: 'package.json' } },
        { id: 'nap', tool: 'sleep_ms', args: { ms: 1 }, dependsOn: ['read'] },
      ],
    });
    const outcome = await cli.stepwise(['validate', 'good.json']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toContain('valid plan for the dag engine: 2 steps (read → nap)');
  });

  it('prints every problem as "code path message" and exits 2', async () => {
    await cli.write('bad.json', {
      id: 'bad',
      steps: [
        { id: 'a', tool: 'file_read', args: { path: 'x' }, dependsOn: ['c'] },
        { id: 'b', tool: 'rm -rf /', args: {} },
        { id: 'c', tool: 'file_read', args: { path: 7 }, dependsOn: ['a'] },
      ],
    });
    const outcome = await cli.stepwise(['validate', 'bad.json']);
    expect(outcome.code).toBe(2);
    const lines = outcome.stdout.trim().split('\n');
    for (const line of lines) expect(line).toMatch(/^bad\.json:\d+:\d+ E\d{3} \/\S* .+/);
    // Each path points at its key in the file as JSON.stringify(…, null, 2) laid it out.
    expect(lines).toContain('bad.json:10:7 E001 /steps/0/dependsOn dependency cycle: a → c → a');
    expect(lines.some((line) => line.startsWith('bad.json:16:7 E201 /steps/1/tool '))).toBe(true);
    expect(lines.some((line) => line.startsWith('bad.json:23:9 E202 /steps/2/args/path '))).toBe(true);
    const json = await inProcess(['validate', 'bad.json', '--json'], cli.directory);
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as { ok: boolean; problems: { path: string; line: number }[] };
    expect(report.ok).toBe(false);
    expect(report.problems).toHaveLength(lines.length);
    expect(report.problems.find((problem) => problem.path === '/steps/1/tool')?.line).toBe(16);
  });

  it('locates broken JSON and unknown keys and tools, with a suggestion', async () => {
    await cli.write('broken.json', '{\n  "id": "p",\n  "steps": [\n    { "id": "a" "tool": "file_read" }\n  ]\n}\n');
    const broken = await cli.stepwise(['validate', 'broken.json']);
    expect(broken.code).toBe(2);
    expect(broken.stderr.trim()).toBe('stepwise validate: E004 broken.json:4:17 is not valid JSON: comma expected');
    await cli.write(
      'typos.json',
      '{\n  "id": "p",\n  "steps": [\n    { "id": "a", "tool": "file_raed", "args": { "path": "x" } },\n    { "id": "b", "tool": "file_read", "dependOn": ["a"], "args": { "path": "x" } }\n  ]\n}\n',
    );
    const typos = await cli.stepwise(['validate', 'typos.json']);
    expect(typos.code).toBe(2);
    expect(typos.stdout).toContain('typos.json:4:18 E201 /steps/0/tool tool "file_raed" is not registered');
    expect(typos.stdout).toContain('did you mean "file_read"?');
    expect(typos.stdout).toContain(
      'typos.json:5:39 E001 /steps/1/dependOn unknown key "dependOn"; did you mean "dependsOn"?',
    );
  });

  it('reports configuration problems with file, line and column', async () => {
    const other = await createWorkspace();
    try {
      await other.write('stepwise.config.json', '{\n  "engine": "turbo"\n}\n');
      await other.write('plan.json', { id: 'p', steps: [{ id: 'a', tool: 'file_read', args: { path: 'x' } }] });
      const outcome = await runCli(['validate', 'plan.json'], { cwd: other.directory });
      expect(outcome.code).toBe(2);
      expect(outcome.stderr).toContain('E601');
      expect(outcome.stderr).toContain(`${path.join(other.directory, 'stepwise.config.json')}:2:3 /engine`);
    } finally {
      await other.dispose();
    }
  });
});

describe('approve', () => {
  it('writes a digest-bound authorization that the strict engine accepts once, and refuses after an edit', async () => {
    const plan = {
      id: 'strict',
      steps: [
        { id: 'one', tool: 'sleep_ms', args: { ms: 1, label: 'strict-one' } },
        { id: 'two', tool: 'sleep_ms', args: { ms: 1, label: 'strict-two' } },
      ],
    };
    await cli.write('strict.json', plan);
    const approved = await cli.stepwise(['approve', 'strict.json', '--by', 'alice']);
    expect(approved.code).toBe(0);
    const authorization = JSON.parse(
      await readFile(path.join(cli.directory, 'strict.approval.json'), 'utf8'),
    ) as Record<string, string>;
    expect(authorization).toMatchObject({ planId: 'strict', by: 'alice' });
    expect(authorization.planDigest).toMatch(/^[0-9a-f]{64}$/);

    const unauthorized = await cli.stepwise(['run', 'strict.json', '--engine', 'sequential', '--json']);
    expect(unauthorized.code).toBe(2);
    expect(unauthorized.stderr).toContain('E002');

    await cli.resetCalls();
    const first = await cli.stepwise([
      'run',
      'strict.json',
      '-e',
      'sequential',
      '-a',
      'strict.approval.json',
      '--json',
    ]);
    expect(first.code, first.stderr).toBe(0);
    const events = parseJsonLines(first.stdout);
    expect(events[0]).toMatchObject({ type: 'run-start', engine: 'sequential', authorization: { by: 'alice' } });
    expect(await cli.readCalls()).toEqual(['start strict-one', 'end strict-one', 'start strict-two', 'end strict-two']);

    // The same authorization again: the same run, replayed from the journal, no tool runs.
    const again = await cli.stepwise([
      'run',
      'strict.json',
      '-e',
      'sequential',
      '-a',
      'strict.approval.json',
      '--json',
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(await cli.readCalls()).toHaveLength(4);

    await cli.write('strict.json', {
      ...plan,
      steps: [...plan.steps, { id: 'three', tool: 'sleep_ms', args: { ms: 1 } }],
    });
    const edited = await cli.stepwise([
      'run',
      'strict.json',
      '-e',
      'sequential',
      '-a',
      'strict.approval.json',
      '--json',
    ]);
    expect(edited.code).toBe(2);
    expect(edited.stderr).toContain('E003');
    expect(await cli.readCalls()).toHaveLength(4);

    const noName = await cli.stepwise(['approve', 'strict.json']);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('--by NAME is required');
  });
});
