import { spawn } from 'node:child_process';
import { copyFile, cp, readdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, cliEnvironment, createWorkspace, PACKAGE_DIRECTORY, runCli } from './helpers.js';

type Workspace = Awaited<ReturnType<typeof createWorkspace>>;

const PLAN = { id: 'p', steps: [{ id: 'a', tool: 'file_read', args: { path: 'package.json' } }] };
const UNSET = 'STEPWISE_TEST_UNSET_KEY';
const unsetKeyModel = { baseURL: 'http://127.0.0.1:9/v1', model: 'm', apiKeyEnv: UNSET };

interface ValidateReport {
  ok: boolean;
  ready?: boolean;
  notReady?: { code: string; location: string; message: string; package?: string };
  problems: unknown[];
}

let workspace: Workspace;
beforeAll(async () => {
  assertBuilt();
  workspace = await createWorkspace();
  await workspace.write('plan.json', PLAN);
});
afterAll(() => workspace?.dispose());

async function validateWith(config: Record<string, unknown>, args: readonly string[] = [], env = {}) {
  await workspace.write('stepwise.config.json', config);
  return runCli(['validate', 'plan.json', ...args], { cwd: workspace.directory, env });
}

describe('stepwise validate says what stepwise run will need', () => {
  it('names the unset model key variable instead of a bare ✓, and exits 2 as run would', async () => {
    const config = { engine: 'agentic', model: unsetKeyModel };
    const outcome = await validateWith(config);
    expect(outcome.code).toBe(2);
    expect(outcome.stdout.trim()).toBe('! plan.json is a valid plan for the agentic engine: 1 step (a)');
    expect(outcome.stdout).not.toContain('✓');
    expect(outcome.stderr.trim()).toBe(
      `stepwise validate: stepwise run cannot start with this configuration here: E601 the model's API key variable ${UNSET} is not set in the environment (at /model/apiKeyEnv)`,
    );
    const json = await validateWith(config, ['--json']);
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as ValidateReport;
    expect(report).toMatchObject({ ok: true, ready: false, notReady: { code: 'E601', location: '/model/apiKeyEnv' } });
    expect(report.notReady?.message).toContain(UNSET);
    // What run says: the same E601.
    const run = await runCli(['run', 'plan.json'], { cwd: workspace.directory });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`E601 the model's API key variable ${UNSET} is not set`);
    // With the variable set, the plain ✓ and exit 0.
    const ready = await validateWith(config, [], { [UNSET]: 'sk-test' });
    expect(ready.stderr).toBe('');
    expect(ready.code).toBe(0);
    expect(ready.stdout).toContain('✓ plan.json is a valid plan for the agentic engine: 1 step (a)');
    const readyJson = JSON.parse((await validateWith(config, ['--json'], { [UNSET]: 'sk-test' })).stdout);
    expect(readyJson).toMatchObject({ ok: true, ready: true });
    expect(readyJson.notReady).toBeUndefined();
  });

  it('checks the model of a dag configuration too, and the agentic engine without a model', async () => {
    const dag = await validateWith({ engine: 'dag', model: unsetKeyModel });
    expect(dag.code).toBe(2);
    expect(dag.stdout).toContain('! plan.json is a valid plan for the dag engine');
    expect(dag.stderr).toContain(UNSET);
    const noModel = await validateWith({ engine: 'agentic' });
    expect(noModel.code).toBe(2);
    expect(noModel.stderr).toContain('E601 the agentic engine needs a model');
    expect(noModel.stderr).toContain('(at /model)');
    // --no-tools checks the plan's structure only: no engine, no model.
    const structure = await validateWith({ engine: 'agentic' }, ['--no-tools']);
    expect(structure.code).toBe(0);
    expect(structure.stdout).toContain('✓ plan.json is a valid plan for the agentic engine');
  });

  it('reports the plan problems and what run needs together', async () => {
    await workspace.write('bad.json', { id: 'bad', steps: [{ id: 'a', tool: 'file_raed', args: { path: 'x' } }] });
    await workspace.write('stepwise.config.json', { engine: 'agentic', model: unsetKeyModel });
    const outcome = await runCli(['validate', 'bad.json'], { cwd: workspace.directory });
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toMatch(/^bad\.json:\d+:\d+ E201 \/steps\/0\/tool tool "file_raed" is not registered/);
    expect(outcome.stderr).toContain('bad.json: 1 problem');
    expect(outcome.stderr).toContain(UNSET);
  });
});

/** `node <args>`: a CLI copied elsewhere resolves its packages from its own node_modules. */
function runNode(
  args: readonly string[],
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: cliEnvironment(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('in a project without @stepwise/engine-agentic', () => {
  let project: Workspace;
  let bin: string;

  beforeAll(async () => {
    // The CLI as a project installs it, beside every package of this repository but the agentic engine.
    project = await createWorkspace();
    const modules = path.join(project.directory, 'node_modules');
    const installed = path.join(PACKAGE_DIRECTORY, '..', '..', 'node_modules');
    const cli = path.join(modules, '@stepwise', 'cli');
    // The whole build: bin.js loads the commands from a chunk beside it.
    await cp(path.dirname(BIN), path.join(cli, 'dist'), { recursive: true });
    await copyFile(path.join(PACKAGE_DIRECTORY, 'package.json'), path.join(cli, 'package.json'));
    await symlink(path.join(PACKAGE_DIRECTORY, 'node_modules'), path.join(cli, 'node_modules'));
    for (const name of await readdir(installed)) {
      if (name.startsWith('.') || name === '@stepwise') continue;
      await symlink(path.join(installed, name), path.join(modules, name));
    }
    for (const name of await readdir(path.join(installed, '@stepwise'))) {
      if (name === 'cli' || name === 'engine-agentic') continue;
      await symlink(path.join(installed, '@stepwise', name), path.join(modules, '@stepwise', name));
    }
    bin = path.join(cli, 'dist', 'bin.js');
    await project.write('plan.json', PLAN);
    await project.write('stepwise.config.json', {
      engine: 'agentic',
      model: { baseURL: 'http://127.0.0.1:9/v1', model: 'm' },
    });
  });
  afterAll(() => project?.dispose());

  it('names the package to install, as run does', async () => {
    const validated = await runNode([bin, 'validate', 'plan.json'], project.directory);
    expect(validated.code, validated.stderr).toBe(2);
    expect(validated.stdout.trim()).toBe('! plan.json is a valid plan for the agentic engine: 1 step (a)');
    expect(validated.stderr).toMatch(
      /^stepwise validate: stepwise run cannot start with this configuration here: E601 .* needs @stepwise\/engine-agentic, which is not installed: npm install @stepwise\/engine-agentic \(at \/\w+\)\n$/,
    );
    const json = await runNode([bin, 'validate', 'plan.json', '--json'], project.directory);
    expect(JSON.parse(json.stdout) as ValidateReport).toMatchObject({
      ok: true,
      ready: false,
      notReady: { code: 'E601', package: '@stepwise/engine-agentic' },
    });
    const run = await runNode([bin, 'run', 'plan.json'], project.directory);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'needs @stepwise/engine-agentic, which is not installed: npm install @stepwise/engine-agentic',
    );
  });
});
