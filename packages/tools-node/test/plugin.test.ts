import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MemoryStore, type Step, ToolRegistry } from '@stepwise/core';
import { invokeStep, RunJournal } from '@stepwise/core/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_TOOL_ALIASES, nodeTools } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

let harness: Harness;

beforeAll(async () => {
  harness = await createHarness({ commands: { allow: ['node'] } });
  await writeFile(path.join(harness.workspace, 'package.json'), '{"name":"x"}\n');
  await mkdir(path.join(harness.workspace, 'crate'));
  await writeFile(path.join(harness.workspace, 'crate', 'Cargo.toml'), '[package]\n');
  await mkdir(path.join(harness.workspace, 'empty'));
});

afterAll(async () => {
  await harness.cleanup();
});

async function runStep(step: Step) {
  const journal = new RunJournal({ runId: 'run_plugin', store: new MemoryStore() });
  return invokeStep(
    step,
    { attempt: 1, references: 'literal' },
    {
      runId: 'run_plugin',
      journal,
      registry: harness.registry,
      workspace: harness.workspace,
    },
  );
}

describe('nodeTools plugin', () => {
  it('registers every tool, the aliases and the preconditions', () => {
    expect(
      harness.registry
        .list()
        .map((tool) => tool.name)
        .sort(),
    ).toEqual([
      'dir_list',
      'file_create',
      'file_delete',
      'file_edit',
      'file_glob',
      'file_patch',
      'file_read',
      'file_search',
      'file_write',
      'run_command',
    ]);
    for (const [alias, target] of Object.entries(NODE_TOOL_ALIASES)) {
      expect(harness.registry.get(alias)?.name).toBe(target);
    }
    expect(harness.registry.preconditions.kinds().sort()).toEqual(['dir_exists', 'file_exists', 'project']);
  });

  it('renders JSON Schema for function calling, argv as an array', () => {
    const [runCommand] = harness.registry.toFunctionDefinitions(['run_command']);
    const parameters = runCommand?.parameters as { properties: { command: { type: string } } } | undefined;
    expect(parameters?.properties.command.type).toBe('array');
    expect(runCommand?.description).toContain('node');
  });

  it('runs plans written in another vocabulary through the aliases', async () => {
    const result = await runStep({ id: 'alias', tool: 'read_file', args: { path: 'package.json' } });
    expect(result.status).toBe('succeeded');
    expect((result.output as { contents: string }).contents).toContain('"name"');
  });

  it('can be registered twice with a prefix', async () => {
    const registry = new ToolRegistry();
    await registry.use(nodeTools({ workspace: harness.workspace }));
    await registry.use(nodeTools({ workspace: harness.outside }), { prefix: 'other_' });
    expect(registry.has('other_file_read')).toBe(true);
    expect(registry.has('other_read_file')).toBe(true);
  });
});

describe('preconditions', () => {
  const cases: [string, Step['preconditions'], string | undefined][] = [
    ['file_exists holds', [{ kind: 'file_exists', path: 'package.json' }], undefined],
    ['file_exists fails with E101', [{ kind: 'file_exists', path: 'missing.json' }], 'E101'],
    ['file_exists on a directory fails', [{ kind: 'file_exists', path: 'crate' }], 'E101'],
    ['file_exists outside the workspace fails', [{ kind: 'file_exists', path: '../outside' }], 'E101'],
    ['dir_exists holds', [{ kind: 'dir_exists', path: 'crate' }], undefined],
    ['dir_exists fails with E103', [{ kind: 'dir_exists', path: 'nope' }], 'E103'],
    ['project npm holds at the root', [{ kind: 'project', type: 'npm' }], undefined],
    ['project cargo holds in a subdirectory', [{ kind: 'project', type: 'cargo', path: 'crate' }], undefined],
    ['project of any kind', [{ kind: 'project', path: 'crate' }], undefined],
    ['project go fails with E102', [{ kind: 'project', type: 'go' }], 'E102'],
    ['project in an empty directory fails', [{ kind: 'project', path: 'empty' }], 'E102'],
    ['project of an unknown type fails', [{ kind: 'project', type: 'cobol' }], 'E102'],
  ];

  it.each(cases)('%s', async (_name, preconditions, code) => {
    const result = await runStep({
      id: 'pre',
      tool: 'dir_list',
      args: {},
      ...(preconditions ? { preconditions } : {}),
    });
    if (code === undefined) {
      expect(result.error).toBeUndefined();
      expect(result.status).toBe('succeeded');
    } else {
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe(code);
      expect(result.error?.location).toBe('pre/preconditions/0');
    }
  });
});
