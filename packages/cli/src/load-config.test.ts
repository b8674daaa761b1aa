import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ConfigProblem, findConfigFile, loadConfig, loadConfigFile, parseConfig } from './load-config.js';
import { runnerOptionsFromConfig } from './runner-options-from-config.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-config-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<StepwiseError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!StepwiseError.isInstance(error)) throw new Error(`expected a StepwiseError, got ${String(error)}`);
  return error;
}

describe('loadConfig', () => {
  it('uses defaults when there is no file', async () => {
    const loaded = await loadConfig({ cwd: directory, searchParents: false });
    expect(loaded.file).toBeUndefined();
    const options = runnerOptionsFromConfig(loaded, { cwd: directory });
    expect(options.engine).toBe('dag');
    expect(options.workspace).toBe(directory);
    expect(options.database).toBe(path.join(directory, '.stepwise', 'stepwise.db'));
  });

  it('finds stepwise.config.json in a parent directory and resolves paths against it', async () => {
    await writeFile(
      path.join(directory, 'stepwise.config.json'),
      JSON.stringify({ engine: 'sequential', workspace: 'project', database: 'journal/runs.db' }),
    );
    const nested = path.join(directory, 'a', 'b');
    await mkdir(nested, { recursive: true });
    expect(await findConfigFile(nested)).toBe(path.join(directory, 'stepwise.config.json'));
    const loaded = await loadConfig({ cwd: nested });
    const options = runnerOptionsFromConfig(loaded, { cwd: nested });
    expect(options.engine).toBe('sequential');
    expect(options.workspace).toBe(path.join(directory, 'project'));
    expect(options.database).toBe(path.join(directory, 'journal', 'runs.db'));
    // Flags win and resolve against the current directory.
    const overridden = runnerOptionsFromConfig(loaded, {
      cwd: nested,
      engine: 'dag',
      workspace: '.',
      database: 'x.db',
    });
    expect(overridden.engine).toBe('dag');
    expect(overridden.workspace).toBe(nested);
    expect(overridden.database).toBe(path.join(nested, 'x.db'));
  });

  it('locates every problem of a JSON file by line and column (E601)', async () => {
    const file = path.join(directory, 'stepwise.config.json');
    await writeFile(
      file,
      [
        '{',
        '  "engine": "fast",',
        '  "approvals": {',
        '    "exec": "sometimes"',
        '  },',
        '  "concurrency": 0,',
        '  "colour": true,',
        '  "plugins": ["ok", { "module": 3 }, { "mcp": { "command": "node", "argv": [] } }, 7]',
        '}',
      ].join('\n'),
    );
    const error = await rejection(loadConfigFile(file));
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
    const problems = error.details?.problems as ConfigProblem[];
    const at = (pointer: string) => problems.find((problem) => problem.path === pointer);
    expect(at('/engine')).toMatchObject({ line: 2, column: 3 });
    expect(at('/approvals/exec')).toMatchObject({ line: 4, column: 5 });
    expect(at('/concurrency')).toMatchObject({ line: 6 });
    expect(at('/colour')).toMatchObject({ line: 7, message: 'unknown option "colour"' });
    expect(at('/plugins/1/module')).toMatchObject({ line: 8 });
    expect(at('/plugins/2/mcp/argv')).toMatchObject({ line: 8, message: 'unknown option "argv"' });
    expect(at('/plugins/3')?.message).toMatch(/module specifier/);
    expect(error.message).toContain(`${file}:2:3 /engine`);
    expect(error.location).toBe(`${file}:2:3`);
  });

  it('passes durability and retainOutputs to the runner and refuses a value it does not know', async () => {
    const file = path.join(directory, 'stepwise.config.json');
    await writeFile(file, JSON.stringify({ durability: 'batched', retainOutputs: 'referenced' }));
    const options = runnerOptionsFromConfig(await loadConfig({ cwd: directory }), { cwd: directory });
    expect(options.durability).toBe('batched');
    expect(options.retainOutputs).toBe('referenced');
    await writeFile(file, '{\n  "durability": "eventually"\n}');
    const error = await rejection(loadConfigFile(file));
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
    expect(error.details?.problems).toEqual([expect.objectContaining({ path: '/durability', line: 2 })]);
  });

  it('suggests the option a misspelt key was meant to be, located at the key', async () => {
    const file = path.join(directory, 'stepwise.config.json');
    await writeFile(file, '{\n  "engine": "dag",\n  "concurency": 2,\n  "approvals": { "exce": "auto" }\n}\n');
    const error = await rejection(loadConfigFile(file));
    const problems = error.details?.problems as ConfigProblem[];
    // zod reports nested objects first; the order is zod's, the content is what matters here.
    expect(problems).toHaveLength(2);
    expect(problems).toEqual(
      expect.arrayContaining([
        {
          path: '/concurency',
          message: 'unknown option "concurency"; did you mean "concurrency"?',
          line: 3,
          column: 3,
        },
        { path: '/approvals/exce', message: 'unknown option "exce"; did you mean "exec"?', line: 4, column: 18 },
      ]),
    );
  });

  it('refuses an API key in the file and asks for its variable name', async () => {
    const error = (() => {
      try {
        parseConfig({ model: { baseURL: 'http://localhost:11434/v1', model: 'qwen', apiKey: 'sk-secret' } });
      } catch (thrown) {
        return thrown as StepwiseError;
      }
      throw new Error('accepted an API key');
    })();
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
    expect(error.message).toMatch(/apiKeyEnv/);
    expect(error.message).not.toContain('sk-secret');
  });

  it('gives E004 with the position for broken JSON', async () => {
    const file = path.join(directory, 'stepwise.config.json');
    await writeFile(file, '{\n  "engine": "dag",\n  oops\n}');
    const error = await rejection(loadConfigFile(file));
    expect(error.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(error.message).toContain(`${file}:3:`);
  });

  it('reads comments and trailing commas (JSONC), and locates problems after them', async () => {
    const file = path.join(directory, 'stepwise.config.json');
    await writeFile(
      file,
      [
        '// stepwise.config.json',
        '{',
        '  "engine": "dag", /* the default */',
        '  "commands": { "allow": ["node", "git",], },',
        '}',
        '',
      ].join('\n'),
    );
    expect(await loadConfigFile(file)).toEqual({ engine: 'dag', commands: { allow: ['node', 'git'] } });
    await writeFile(file, '// stepwise.config.json\n{\n  /* which engine */\n  "engine": "fast",\n}\n');
    const error = await rejection(loadConfigFile(file));
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
    expect(error.location).toBe(`${file}:4:3`);
    await writeFile(file, '// stepwise.config.json\n{\n  "engine": "dag" // no comma\n  "concurrency": 2\n}\n');
    const broken = await rejection(loadConfigFile(file));
    expect(broken.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(broken.message).toBe(`${file}:4:3 is not valid JSON: comma expected`);
  });

  it('finds stepwise.config.jsonc too', async () => {
    await writeFile(path.join(directory, 'stepwise.config.jsonc'), '{ "engine": "sequential", // strict\n}\n');
    const loaded = await loadConfig({ cwd: directory, searchParents: false });
    expect(loaded.file).toBe(path.join(directory, 'stepwise.config.jsonc'));
    expect(loaded.config).toEqual({ engine: 'sequential' });
  });

  it('loads .mjs and .ts files exporting a default object (the .ts through jiti)', async () => {
    await writeFile(path.join(directory, 'a.mjs'), 'export default { engine: "sequential", concurrency: 2 };\n');
    expect(await loadConfigFile(path.join(directory, 'a.mjs'))).toMatchObject({ engine: 'sequential', concurrency: 2 });
    await writeFile(
      path.join(directory, 'stepwise.config.ts'),
      [
        "type Engine = 'dag' | 'agentic';",
        "const engine: Engine = 'dag';",
        'export default { engine, commands: { allow: ["node"] as string[] } };',
      ].join('\n'),
    );
    const loaded = await loadConfig({ cwd: directory, searchParents: false });
    expect(loaded.file).toBe(path.join(directory, 'stepwise.config.ts'));
    expect(loaded.config).toMatchObject({ engine: 'dag', commands: { allow: ['node'] } });
    await writeFile(path.join(directory, 'bad.ts'), 'export default { engine: 42 };\n');
    const error = await rejection(loadConfigFile(path.join(directory, 'bad.ts')));
    expect(error.code).toBe(ErrorCodes.CONFIG_INVALID);
    expect(error.message).toContain('/engine');
  });

  it('maps approvals to the core policy', async () => {
    const loaded = {
      config: parseConfig({
        approvals: { exec: 'auto', write: 'prompt', tools: { file_delete: 'deny' }, nonInteractive: 'auto' },
      }),
      file: undefined,
      directory,
    };
    const options = runnerOptionsFromConfig(loaded, { cwd: directory });
    expect(options.approvals?.policy).toEqual({
      effects: { exec: 'auto', write: 'prompt' },
      tools: { file_delete: 'deny' },
      nonInteractive: 'auto',
    });
    expect(runnerOptionsFromConfig(loaded, { nonInteractive: 'deny' }).approvals?.policy?.nonInteractive).toBe('deny');
  });
});
