import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWorkspace, FIXTURES, inProcess, parseJsonLines, runCli, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

describe('run', () => {
  it('streams one RunEvent per line with --json, gap-free, and journals the run', async () => {
    await cli.write('survey.json', {
      id: 'survey',
      goal: 'Summarise the project',
      steps: [
        { id: 'read', tool: 'file_read', args: { path: 'package.json' } },
        { id: 'search', tool: 'file_search', args: { query: 'Sample' } },
        {
          id: 'summary',
          tool: 'file_write',
          dependsOn: ['read', 'search'],
          args: { path: 'out/summary.txt', contents: { $ref: 'read', pointer: '/contents' } },
        },
      ],
    });
    const outcome = await cli.stepwise(['run', 'survey.json', '--json']);
    expect(outcome.stderr).toMatch(/completed/);
    expect(outcome.code).toBe(0);
    const events = parseJsonLines(outcome.stdout);
    expect(events[0]?.type).toBe('run-start');
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(new Set(events.map((event) => event.runId)).size).toBe(1);
    const types = new Set(events.map((event) => event.type));
    for (const type of ['step-start', 'tool-call', 'tool-result', 'step-end']) expect(types.has(type)).toBe(true);
    expect(await readFile(path.join(cli.directory, 'out', 'summary.txt'), 'utf8')).toContain('"name": "sample"');
    expect(existsSync(path.join(cli.directory, '.stepwise', 'stepwise.db'))).toBe(true);

    const runId = events[0]?.runId as string;
    const runs = await inProcess(['runs', '--json'], cli.directory);
    expect(runs.code).toBe(0);
    expect((JSON.parse(runs.stdout) as { runId: string }[]).map((run) => run.runId)).toContain(runId);

    const shown = await inProcess(['show', runId], cli.directory);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('Executions');
    expect(shown.stdout).toMatch(/file_write \(write\)\s+succeeded/);
    // Step rows: the status column starts at one offset, measured from the longest tool name.
    const stepRows = shown.stdout.split('\n').filter((line) => /^ {2}(read|search|summary) /.test(line));
    expect(stepRows).toHaveLength(3);
    expect(new Set(stepRows.map((line) => line.indexOf('succeeded'))).size).toBe(1);
    expect(stepRows.find((line) => line.startsWith('  search'))).toMatch(/^ {2}search {3}file_search {2}succeeded/);

    const summaryCall = events.find((event) => event.type === 'tool-call' && event.stepId === 'summary');
    const executionId = summaryCall?.executionId as string;
    const record = await inProcess(['show', executionId, '--json'], cli.directory);
    expect(record.code).toBe(0);
    expect(JSON.parse(record.stdout)).toMatchObject({
      executionId,
      tool: 'file_write',
      status: 'succeeded',
      why: { planId: 'survey', goal: 'Summarise the project' },
    });

    const report = await inProcess(['report', runId, '--out', 'report.html'], cli.directory);
    expect(report.code).toBe(0);
    const html = await readFile(path.join(cli.directory, 'report.html'), 'utf8');
    expect(html).toContain('<svg id="dag"');
    expect(html.match(/class="bar /g)).toHaveLength(3);

    const unknown = await inProcess(['show', 'run_doesnotexist'], cli.directory);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('E505');
  });

  it('prints JSONL without --json when stdout is not a terminal', async () => {
    await cli.write('tiny.json', { id: 'tiny', steps: [{ id: 'only', tool: 'sleep_ms', args: { ms: 1 } }] });
    const outcome = await cli.stepwise(['run', 'tiny.json']);
    expect(outcome.code).toBe(0);
    expect(parseJsonLines(outcome.stdout).at(-1)).toMatchObject({ type: 'run-end' });
  });

  it('refuses an invalid plan before running anything (exit 2)', async () => {
    await cli.write('invalid.json', { id: 'invalid', steps: [{ id: 'a', tool: 'nope' }] });
    const outcome = await inProcess(['run', 'invalid.json', '--json'], cli.directory);
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).toContain('E201 /steps/0/tool');
  });
});

describe('exit codes', () => {
  const cases: [string, number, Record<string, unknown>, string[]][] = [
    ['a failed step', 30, { tool: 'file_read', args: { path: 'missing.txt' } }, []],
    ['a sandbox violation', 32, { tool: 'file_read', args: { path: '../../../etc/passwd' } }, []],
    ['a step timeout', 34, { tool: 'sleep_ms', args: { ms: 5000 }, timeoutMs: 50 }, []],
    ['an approval denied by the non-interactive fallback', 33, { tool: 'deploy', args: { target: 'prod' } }, []],
    [
      'an approval denied with --approve deny',
      33,
      { tool: 'file_write', args: { path: 'x.txt', contents: 'x' }, requiresApproval: true },
      ['--approve', 'deny'],
    ],
    ['an approval given with --approve auto', 0, { tool: 'deploy', args: { target: 'prod' } }, ['--approve', 'auto']],
  ];
  for (const [name, code, step, flags] of cases) {
    it(`exits ${code} for ${name}`, async () => {
      await cli.write('exit.json', { id: 'exit', steps: [{ id: 'step', ...step }] });
      const outcome = await cli.stepwise(['run', 'exit.json', '--json', ...flags]);
      expect(outcome.code, outcome.stderr).toBe(code);
      expect(outcome.stderr).toContain(`exit ${code}`);
    });
  }

  it('exits 31 when an agentic step hits its turn limit (model over HTTP)', async () => {
    const { startFakeOpenAIServer, toolCall } = await import('@stepwise/engine-agentic/testing');
    const server = await startFakeOpenAIServer({ replies: () => toolCall('sleep_ms', { ms: 1 }) });
    const agentic = await createWorkspace();
    try {
      await agentic.write('stepwise.config.json', {
        engine: 'agentic',
        model: { baseURL: server.url, model: 'fake', apiKeyEnv: 'FAKE_MODEL_KEY' },
        agentic: { maxTurns: 2 },
        plugins: [{ module: path.join(FIXTURES, 'test-plugin.mjs') }],
      });
      await agentic.write('goal.json', { id: 'goal', steps: [{ id: 'loop', description: 'never finishes' }] });
      const outcome = await runCli(['run', 'goal.json', '--json'], {
        cwd: agentic.directory,
        env: { FAKE_MODEL_KEY: 'sk-test-0123456789abcdefghij' },
      });
      expect(outcome.code, outcome.stderr).toBe(31);
      const events = parseJsonLines(outcome.stdout);
      expect(events.filter((event) => event.type === 'model-call')).toHaveLength(2);
      expect(outcome.stdout).not.toContain('sk-test-0123456789abcdefghij');
      expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test-0123456789abcdefghij');
    } finally {
      await server.close();
      await agentic.dispose();
    }
  });
});
