import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type McpPlugin, mcpTools } from '../src/index.js';
import { fixtureServer, runWithKernel, temporaryDirectory } from './helpers.js';

describe('catalog fixture', () => {
  let plugin: McpPlugin;
  let registry: ToolRegistry;
  let directory: { path: string; remove: () => Promise<void> };
  let callLog: string;
  const warnings: string[] = [];

  beforeAll(async () => {
    directory = await temporaryDirectory();
    callLog = join(directory.path, 'calls.jsonl');
    await writeFile(callLog, '');
    plugin = await mcpTools(
      fixtureServer('catalog-server.mjs', {
        env: { CALL_LOG: callLog },
        onWarning: (message) => warnings.push(message),
      }),
    );
    registry = new ToolRegistry();
    await registry.use(plugin);
  });
  afterAll(async () => {
    await plugin?.dispose();
    await directory?.remove();
  });

  it('lists every page of tools', () => {
    expect(plugin.listing.map((tool) => tool.name)).toHaveLength(9);
    expect(plugin.name).toBe('catalog');
    expect(plugin.version).toBe('1.2.3');
    expect(registry.has('odd_name_')).toBe(true);
    expect(warnings.some((warning) => warning.includes('"odd name!" is registered as "odd_name_"'))).toBe(true);
  });

  it('maps annotations to effects', () => {
    expect(registry.get('echo')?.effect).toBe('read');
    expect(registry.get('strict_add')?.idempotent).toBe(true);
    expect(registry.get('remove_everything')?.effect).toBe('destructive');
    expect(registry.get('plain')?.effect).toBe('write');
  });

  it('runs a tool and returns text and structured content', async () => {
    const result = await runWithKernel(makePlan([{ id: 'say', tool: 'echo', args: { message: 'hi' } }]), registry);
    expect(result.steps[0]).toMatchObject({
      status: 'succeeded',
      output: { text: 'echo: hi', structured: { echoed: { message: 'hi' } } },
    });
  });

  it('refuses arguments that fail the schema before sending anything', async () => {
    const before = await readFile(callLog, 'utf8');
    const result = await runWithKernel(
      makePlan([{ id: 'add', tool: 'strict_add', args: { a: 1, b: 'two' } }]),
      registry,
    );
    expect(result.steps[0]?.status).toBe('failed');
    expect(result.steps[0]?.error?.code).toBe('E202');
    expect(await readFile(callLog, 'utf8')).toBe(before);
    const ok = await runWithKernel(makePlan([{ id: 'add', tool: 'strict_add', args: { a: 1, b: 2 } }]), registry);
    expect(ok.steps[0]?.output).toMatchObject({ text: '3' });
    expect(await readFile(callLog, 'utf8')).toContain('"strict_add"');
  });
});
