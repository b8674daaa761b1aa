import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertBuilt,
  createWorkspace,
  FIXTURES,
  PACKAGE_DIRECTORY,
  parseJsonLines,
  runCli,
  startCli,
} from './helpers.js';

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;
let workspace: Workspace;
let cwd: string;
let counterFile: string;

const REPOSITORY = path.resolve(PACKAGE_DIRECTORY, '..', '..');

async function readCalls(): Promise<string[]> {
  const text = await readFile(counterFile, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean);
}

async function resetCalls(): Promise<void> {
  await writeFile(counterFile, '');
}

const stepwise = (args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) =>
  runCli(args, { cwd, ...options });

beforeAll(async () => {
  assertBuilt();
  workspace = await createWorkspace({
    'src/math.js': 'export function add(a, b) {\n  return a + b;\n}\n',
  });
  cwd = workspace.directory;
  counterFile = path.join(cwd, 'calls.log');
  await workspace.write('stepwise.config.json', {
    commands: { allow: ['node'] },
    leaseTtlMs: 1000,
    retry: { maxAttempts: 1 },
    plugins: [{ module: path.join(FIXTURES, 'test-plugin.mjs'), options: { counterFile } }],
  });
});

afterAll(async () => {
  await workspace?.dispose();
});

describe('usage', () => {
  it('prints help for the tool and for every command', async () => {
    const top = await stepwise(['--help']);
    expect(top.code).toBe(0);
    for (const command of ['run', 'resume', 'validate', 'approve', 'runs', 'show', 'report', 'graph']) {
      expect(top.stdout).toContain(`  ${command} `);
      const help = await stepwise([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: stepwise ${command}`));
      expect(help.stdout).toContain('Examples:');
    }
  });

  it('gives one clear line and exit 2 for unknown flags, missing files and unknown commands', async () => {
    const unknownFlag = await stepwise(['run', 'plan.json', '--bogus']);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr.trim().split('\n')).toHaveLength(1);
    expect(unknownFlag.stderr).toContain("'--bogus'");
    const missing = await stepwise(['run', 'nowhere.json']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe('stepwise run: E004 plan not found: nowhere.json');
    const command = await stepwise(['frobnicate']);
    expect(command.code).toBe(2);
    expect(command.stderr.trim().split('\n')).toHaveLength(1);
    const badChoice = await stepwise(['graph', 'plan.json', '--format', 'png']);
    expect(badChoice.code).toBe(2);
    expect(badChoice.stderr).toContain('--format must be one of mermaid, dot');
  });
});

describe('validate', () => {
  it('accepts a good plan', async () => {
    await workspace.write('good.json', {
      id: 'good',
      steps: [
        { id: 'read', tool: 'file_read', args: { path: 'package.json' } },
        { id: 'nap', tool: 'sleep_ms', args: { ms: 1 }, dependsOn: ['read'] },
      ],
    });
    const outcome = await stepwise(['validate', 'good.json']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toContain('valid plan for the dag engine: 2 steps (read → nap)');
  });

  it('prints every problem as "code path message" and exits 2', async () => {
    await workspace.write('bad.json', {
      id: 'bad',
      steps: [
        { id: 'a', tool: 'file_read', args: { path: 'x' }, dependsOn: ['c'] },
        { id: 'b', tool: 'rm -rf /', args: {} },
        { id: 'c', tool: 'file_read', args: { path: 7 }, dependsOn: ['a'] },
        { id: 'd', tool: 'file_write', args: { path: 'o', contents: { $ref: 'b', pointer: '/x' } } },
      ],
    });
    const outcome = await stepwise(['validate', 'bad.json']);
    expect(outcome.code).toBe(2);
    const lines = outcome.stdout.trim().split('\n');
    for (const line of lines) expect(line).toMatch(/^E\d{3} \/\S* .+/);
    expect(lines).toContain('E001 /steps/0/dependsOn dependency cycle: a → c → a');
    expect(lines.some((line) => line.startsWith('E201 /steps/1/tool '))).toBe(true);
    expect(lines.some((line) => line.startsWith('E202 /steps/2/args/path '))).toBe(true);
    expect(lines.some((line) => line.startsWith('E001 /steps/3/args/contents '))).toBe(true);
    const json = await stepwise(['validate', 'bad.json', '--json']);
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as { ok: boolean; problems: unknown[] };
    expect(report.ok).toBe(false);
    expect(report.problems).toHaveLength(lines.length);
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

describe('run', () => {
  it('streams one RunEvent per line with --json, gap-free, and journals the run', async () => {
    await workspace.write('survey.json', {
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
    const outcome = await stepwise(['run', 'survey.json', '--json']);
    expect(outcome.stderr).toMatch(/completed/);
    expect(outcome.code).toBe(0);
    const events = parseJsonLines(outcome.stdout);
    expect(events[0]?.type).toBe('run-start');
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(new Set(events.map((event) => event.runId)).size).toBe(1);
    const types = new Set(events.map((event) => event.type));
    for (const type of ['step-start', 'tool-call', 'tool-result', 'step-end']) expect(types.has(type)).toBe(true);
    expect(await readFile(path.join(cwd, 'out', 'summary.txt'), 'utf8')).toContain('"name": "sample"');
    expect(existsSync(path.join(cwd, '.stepwise', 'stepwise.db'))).toBe(true);

    const runId = events[0]?.runId as string;
    const runs = await stepwise(['runs', '--json']);
    expect(runs.code).toBe(0);
    expect((JSON.parse(runs.stdout) as { runId: string }[]).map((run) => run.runId)).toContain(runId);
    const listed = await stepwise(['runs', '--status', 'completed']);
    expect(listed.stdout).toContain(runId);

    const shown = await stepwise(['show', runId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('Executions');
    expect(shown.stdout).toMatch(/file_write \(write\)\s+succeeded/);

    const executionId = (events.find((event) => event.type === 'tool-call' && event.stepId === 'summary') ?? {})
      .executionId as string;
    const record = await stepwise(['show', executionId, '--json']);
    expect(record.code).toBe(0);
    expect(JSON.parse(record.stdout)).toMatchObject({
      executionId,
      tool: 'file_write',
      status: 'succeeded',
      why: { planId: 'survey', goal: 'Summarise the project' },
    });

    const report = await stepwise(['report', runId, '--out', 'report.html']);
    expect(report.code).toBe(0);
    const html = await readFile(path.join(cwd, 'report.html'), 'utf8');
    expect(html).toContain('<svg id="dag"');
    expect(html.match(/class="bar /g)).toHaveLength(3);

    const unknown = await stepwise(['show', 'run_doesnotexist']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('E505');
  });

  it('prints JSONL without --json when stdout is not a terminal', async () => {
    await workspace.write('tiny.json', { id: 'tiny', steps: [{ id: 'only', tool: 'sleep_ms', args: { ms: 1 } }] });
    const outcome = await stepwise(['run', 'tiny.json']);
    expect(outcome.code).toBe(0);
    expect(parseJsonLines(outcome.stdout).at(-1)).toMatchObject({ type: 'run-end' });
  });

  it('refuses an invalid plan before running anything (exit 2)', async () => {
    await workspace.write('invalid.json', { id: 'invalid', steps: [{ id: 'a', tool: 'nope' }] });
    const outcome = await stepwise(['run', 'invalid.json', '--json']);
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
      await workspace.write('exit.json', { id: 'exit', steps: [{ id: 'step', ...step }] });
      const outcome = await stepwise(['run', 'exit.json', '--json', ...flags]);
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

describe('approve', () => {
  it('writes a digest-bound authorization that the strict engine accepts once, and refuses after an edit', async () => {
    const plan = {
      id: 'strict',
      steps: [
        { id: 'one', tool: 'sleep_ms', args: { ms: 1, label: 'strict-one' } },
        { id: 'two', tool: 'sleep_ms', args: { ms: 1, label: 'strict-two' } },
      ],
    };
    await workspace.write('strict.json', plan);
    const approved = await stepwise(['approve', 'strict.json', '--by', 'alice']);
    expect(approved.code).toBe(0);
    const authorization = JSON.parse(await readFile(path.join(cwd, 'strict.approval.json'), 'utf8')) as Record<
      string,
      string
    >;
    expect(authorization).toMatchObject({ planId: 'strict', by: 'alice' });
    expect(authorization.planDigest).toMatch(/^[0-9a-f]{64}$/);

    const unauthorized = await stepwise(['run', 'strict.json', '--engine', 'sequential', '--json']);
    expect(unauthorized.code).toBe(2);
    expect(unauthorized.stderr).toContain('E002');

    await resetCalls();
    const first = await stepwise(['run', 'strict.json', '-e', 'sequential', '-a', 'strict.approval.json', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const events = parseJsonLines(first.stdout);
    expect(events[0]).toMatchObject({ type: 'run-start', engine: 'sequential', authorization: { by: 'alice' } });
    expect(await readCalls()).toEqual(['start strict-one', 'end strict-one', 'start strict-two', 'end strict-two']);

    // The same authorization again: the same run, replayed from the journal, no tool runs.
    const again = await stepwise(['run', 'strict.json', '-e', 'sequential', '-a', 'strict.approval.json', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(await readCalls()).toHaveLength(4);

    await workspace.write('strict.json', {
      ...plan,
      steps: [...plan.steps, { id: 'three', tool: 'sleep_ms', args: { ms: 1 } }],
    });
    const edited = await stepwise(['run', 'strict.json', '-e', 'sequential', '-a', 'strict.approval.json', '--json']);
    expect(edited.code).toBe(2);
    expect(edited.stderr).toContain('E003');
    expect(await readCalls()).toHaveLength(4);

    const noName = await stepwise(['approve', 'strict.json']);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('--by NAME is required');
  });
});

describe('resume', () => {
  it('continues a run after its process was killed with SIGKILL', async () => {
    await resetCalls();
    await workspace.write('slow.json', {
      id: 'slow',
      steps: [
        { id: 'quick', tool: 'sleep_ms', args: { ms: 1, label: 'quick' } },
        { id: 'slow', tool: 'sleep_ms', args: { ms: 3000, label: 'slow' }, dependsOn: ['quick'] },
        { id: 'after', tool: 'sleep_ms', args: { ms: 1, label: 'after' }, dependsOn: ['slow'] },
      ],
    });
    const child = startCli(['run', 'slow.json', '--json'], { cwd });
    const lines: Record<string, unknown>[] = [];
    await new Promise<void>((resolve, reject) => {
      let buffer = '';
      const timer = setTimeout(() => reject(new Error('the slow step never started')), 20_000);
      child.stdout?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        let newline = buffer.indexOf('\n');
        while (newline !== -1) {
          const event = JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>;
          lines.push(event);
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
          if (event.type === 'tool-call' && event.stepId === 'slow') {
            clearTimeout(timer);
            child.kill('SIGKILL');
            resolve();
          }
        }
      });
      child.on('exit', () => resolve());
    });
    const exit = await new Promise<NodeJS.Signals | null>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
      else child.on('exit', (_code, signal) => resolve(signal));
    });
    expect(exit).toBe('SIGKILL');
    const runId = lines[0]?.runId as string;
    expect(lines.some((event) => event.type === 'run-end')).toBe(false);
    expect(await readCalls()).toEqual(['start quick', 'end quick', 'start slow']);

    const resumed = await stepwise(['resume', runId, '--json'], { timeoutMs: 30_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseJsonLines(resumed.stdout);
    expect(events[0]).toMatchObject({ type: 'run-resume', interrupted: [{ stepId: 'slow', action: 'rerun' }] });
    expect(events[0]?.seq).toBe((lines.at(-1)?.seq as number) + 1);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    // The completed step did not run again; the interrupted idempotent one did, once.
    expect(await readCalls()).toEqual([
      'start quick',
      'end quick',
      'start slow',
      'start slow',
      'end slow',
      'start after',
      'end after',
    ]);
    const shown = await stepwise(['show', runId, '--json']);
    expect((JSON.parse(shown.stdout) as { run: { status: string } }).run.status).toBe('completed');
  }, 60_000);
});

describe('plugins from the configuration', () => {
  const memoryServer = path.join(
    REPOSITORY,
    'node_modules',
    '@modelcontextprotocol',
    'server-memory',
    'dist',
    'index.js',
  );

  it.skipIf(!existsSync(memoryServer))(
    'loads an npm plugin and an MCP server and runs a plan with both',
    async () => {
      const host = await createWorkspace();
      try {
        // Installed as a user would have it: in the project's node_modules.
        await mkdir(path.join(host.directory, 'node_modules'), { recursive: true });
        await symlink(
          path.join(REPOSITORY, 'examples', 'plugin-hello'),
          path.join(host.directory, 'node_modules', 'stepwise-plugin-hello'),
        );
        await host.write('stepwise.config.json', {
          plugins: [
            'stepwise-plugin-hello',
            {
              mcp: {
                command: process.execPath,
                args: [memoryServer],
                env: { MEMORY_FILE_PATH: path.join(host.directory, 'memory.jsonl') },
              },
              prefix: 'memory_',
            },
          ],
        });
        await host.write('plan.json', {
          id: 'plugins',
          steps: [
            { id: 'greet', tool: 'hello', args: { name: 'Ada' } },
            {
              id: 'remember',
              tool: 'memory_create_entities',
              args: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] },
            },
            { id: 'recall', tool: 'memory_search_nodes', args: { query: 'Ada' }, dependsOn: ['remember'] },
          ],
        });
        const validated = await runCli(['validate', 'plan.json'], { cwd: host.directory });
        expect(validated.code, validated.stderr + validated.stdout).toBe(0);
        const outcome = await runCli(['run', 'plan.json', '--json'], { cwd: host.directory, timeoutMs: 60_000 });
        expect(outcome.code, outcome.stderr).toBe(0);
        const ends = parseJsonLines(outcome.stdout).filter((event) => event.type === 'step-end');
        const output = (stepId: string) =>
          JSON.stringify((ends.find((event) => event.stepId === stepId)?.result as { output?: unknown })?.output);
        expect(output('greet')).toContain('Hello, Ada!');
        expect(output('recall')).toContain('wrote the first program');

        const broken = await createWorkspace();
        try {
          await broken.write('stepwise.config.json', { plugins: ['stepwise-plugin-that-does-not-exist'] });
          await broken.write('plan.json', { id: 'p', steps: [{ id: 'a', tool: 'file_read', args: { path: 'x' } }] });
          const missing = await runCli(['run', 'plan.json', '--json'], { cwd: broken.directory });
          expect(missing.code).toBe(2);
          expect(missing.stderr).toContain('E602');
        } finally {
          await broken.dispose();
        }
      } finally {
        await host.dispose();
      }
    },
    90_000,
  );
});
