import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readAll, ToolRegistry } from '@stepwise/core';
import { MemoryStore, makePlan } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type McpPlugin, mcpTools } from '../src/index.js';
import { fixtureServer, runWithKernel, temporaryDirectory, waitFor } from './helpers.js';

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
        sandboxOptions: { workspace: directory.path },
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
    // The dag engine refuses the whole plan up front, with the same schema.
    expect(() =>
      dagEngine({ tools: registry }).run(makePlan([{ id: 'add', tool: 'strict_add', args: { a: 1, c: 2 } }])),
    ).toThrow(expect.objectContaining({ code: 'E202' }));
    expect(await readFile(callLog, 'utf8')).toBe(before);
    const ok = await runWithKernel(makePlan([{ id: 'add', tool: 'strict_add', args: { a: 1, b: 2 } }]), registry);
    expect(ok.steps[0]?.output).toMatchObject({ text: '3' });
    expect(await readFile(callLog, 'utf8')).toContain('"strict_add"');
  });
});

describe('catalog fixture results', () => {
  let plugin: McpPlugin;
  let registry: ToolRegistry;

  beforeAll(async () => {
    plugin = await mcpTools(fixtureServer('catalog-server.mjs', { onWarning: () => undefined }));
    registry = new ToolRegistry();
    await registry.use(plugin, { prefix: 'cat_' });
  });
  afterAll(() => plugin?.dispose());

  it('records images and embedded resources as artifacts and keeps links in the output', async () => {
    const result = await runWithKernel(makePlan([{ id: 'draw', tool: 'cat_picture', args: {} }]), registry);
    const step = result.steps[0];
    expect(step?.status).toBe('succeeded');
    expect(step?.output).toEqual({
      text: 'a picture',
      content: [
        { type: 'text', text: 'a picture' },
        { type: 'image', mimeType: 'image/png', artifact: 'picture-1.png' },
        { type: 'resource', uri: 'memo://note', mimeType: 'text/plain', artifact: 'picture-2.txt' },
        { type: 'resource_link', uri: 'file:///elsewhere.txt', name: 'elsewhere' },
      ],
      // How the server ran (sandboxed where bubblewrap starts), recorded with each output.
      sandbox: plugin.sandbox,
    });
    expect(plugin.sandbox?.mode).toBe('available');
    expect(step?.artifacts).toEqual([
      expect.objectContaining({ kind: 'image', name: 'picture-1.png', mediaType: 'image/png' }),
      { kind: 'resource', name: 'picture-2.txt', mediaType: 'text/plain', content: 'remember this' },
    ]);
    expect(
      Buffer.from(step?.artifacts?.[0]?.content ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
  });

  it('turns an isError result into a non-retryable failure carrying the server text', async () => {
    const result = await runWithKernel(makePlan([{ id: 'boom', tool: 'cat_fail', args: {} }]), registry, {
      maxAttempts: 3,
    });
    expect(result.steps[0]).toMatchObject({
      status: 'failed',
      attempt: 1,
      error: { code: 'E300', retryable: false, message: 'fail: disk on fire' },
    });
  });

  it('turns a JSON-RPC error into a non-retryable failure', async () => {
    const result = await runWithKernel(makePlan([{ id: 'boom', tool: 'cat_protocol_fail', args: {} }]), registry);
    expect(result.steps[0]?.error).toMatchObject({ code: 'E300', retryable: false });
    expect(result.steps[0]?.error?.message).toContain('the catalog is closed');
    expect(result.steps[0]?.error?.details).toMatchObject({ mcpCode: -32603 });
  });

  it('journals progress notifications', async () => {
    const store = new MemoryStore();
    const result = await runWithKernel(makePlan([{ id: 'wait', tool: 'cat_slow_progress', args: {} }]), registry, {
      store,
    });
    expect(result.steps[0]?.output).toMatchObject({ text: 'finished' });
    await waitFor(async () => (await readAll(store, result.runId)).some((event) => event.type === 'run-end'));
    const progress = (await readAll(store, result.runId)).filter((event) => event.type === 'progress-report');
    expect(progress.map((event) => (event.type === 'progress-report' ? event.percent : 0))).toEqual([25, 50, 75, 100]);
  });

  it('renders the server schemas for function calling', () => {
    const [definition] = registry.toFunctionDefinitions(['cat_strict_add']);
    expect(definition?.parameters).toMatchObject({ required: ['a', 'b'], additionalProperties: false });
    // The 2020-12 meta-schema reference is dropped so ajv (draft-07) compiles the schema.
    expect(registry.toFunctionDefinitions(['cat_echo'])[0]?.parameters).not.toHaveProperty('$schema');
  });
});
