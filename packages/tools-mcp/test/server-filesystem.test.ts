import { existsSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { type ApprovalRequest, type Plan, type RunStore, ToolRegistry } from '@stepwise/core';
import { dagEngine } from '@stepwise/engine-dag';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type McpPlugin, mcpTools } from '../src/index.js';
import { serverEntry, temporaryDirectory } from './helpers.js';

// @modelcontextprotocol/server-filesystem, pinned in package.json, started as a child process
// with one allowed directory; plans run through the dag engine into a SQLite store.
describe('server-filesystem through the dag engine into SQLite', () => {
  let directory: { path: string; remove: () => Promise<void> };
  let allowed: string;
  let plugin: McpPlugin;
  let registry: ToolRegistry;
  let store: RunStore;
  const approvals: ApprovalRequest[] = [];

  beforeAll(async () => {
    directory = await temporaryDirectory();
    // The server compares real paths; a temp dir under a symlink (macOS /var) must be resolved.
    allowed = await realpath(directory.path);
    await import('node:fs/promises').then((fs) => fs.mkdir(join(allowed, 'allowed')));
    allowed = join(allowed, 'allowed');
    // In the OS sandbox (where there is one) the allowed directory is the only place it can write.
    plugin = await mcpTools({
      command: process.execPath,
      args: [serverEntry('filesystem'), allowed],
      name: 'fs',
      sandboxOptions: { workspace: allowed },
    });
    registry = new ToolRegistry();
    await registry.use(plugin, { prefix: 'fs_' });
    store = createSqliteStore({ path: join(directory.path, 'runs.db') });
  });
  afterAll(async () => {
    await registry?.dispose();
    await store?.close();
    await directory?.remove();
  });

  function engine() {
    return dagEngine({
      tools: registry,
      store,
      approvals: {
        handler: async (request) => {
          approvals.push(request);
          return { decision: 'approve', by: 'test' };
        },
      },
      retry: { maxAttempts: 1 },
    });
  }

  it('creates a directory, writes, edits, lists and reads back', async () => {
    const notes = join(allowed, 'notes');
    const file = join(notes, 'todo.md');
    const plan: Plan = {
      id: 'plan_fs',
      version: 1,
      goal: 'Keep a todo list',
      steps: [
        { id: 'mkdir', tool: 'fs_create_directory', args: { path: notes } },
        {
          id: 'write',
          tool: 'fs_write_file',
          dependsOn: ['mkdir'],
          args: { path: file, content: '# Todo\n- buy milk\n- call Ada\n' },
        },
        {
          id: 'edit',
          tool: 'fs_edit_file',
          dependsOn: ['write'],
          args: { path: file, edits: [{ oldText: '- buy milk', newText: '- buy oat milk' }] },
        },
        { id: 'list', tool: 'fs_list_directory', dependsOn: ['edit'], args: { path: notes } },
        { id: 'read', tool: 'fs_read_text_file', dependsOn: ['edit'], args: { path: file } },
        {
          id: 'copy',
          tool: 'fs_write_file',
          dependsOn: ['read'],
          args: { path: join(notes, 'copy.md'), content: { $ref: 'read', pointer: '/structured/content' } },
        },
      ],
    };
    const handle = engine().run(plan);
    const result = await handle.result;
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual(
      plan.steps.map((step) => [step.id, 'succeeded']),
    );
    expect(result.status).toBe('completed');
    const byId = new Map(result.steps.map((step) => [step.stepId, step]));
    expect(byId.get('edit')?.output).toMatchObject({ text: expect.stringContaining('+- buy oat milk') });
    expect(byId.get('list')?.output).toMatchObject({ text: expect.stringContaining('[FILE] todo.md') });
    expect(byId.get('read')?.output).toMatchObject({ text: '# Todo\n- buy oat milk\n- call Ada\n' });
    expect(await readFile(file, 'utf8')).toBe('# Todo\n- buy oat milk\n- call Ada\n');
    expect(await readFile(join(notes, 'copy.md'), 'utf8')).toBe('# Todo\n- buy oat milk\n- call Ada\n');

    // Annotations decided the effects: only the destructive write/edit tools asked for approval.
    expect(approvals.map((request) => [request.stepId, request.effect])).toEqual(
      expect.arrayContaining([
        ['write', 'destructive'],
        ['edit', 'destructive'],
        ['copy', 'destructive'],
      ]),
    );
    expect(approvals.some((request) => ['mkdir', 'list', 'read'].includes(request.stepId))).toBe(false);

    // The audit trail is in SQLite.
    expect(await store.getRun(result.runId)).toMatchObject({ status: 'completed', stepCount: 6 });
    const read = await store.getExecution(byId.get('read')!.executionId);
    expect(read).toMatchObject({
      tool: 'fs_read_text_file',
      effect: 'read',
      status: 'succeeded',
      args: { path: file },
    });
    const edit = await store.getExecution(byId.get('edit')!.executionId);
    expect(edit?.why.approvals).toEqual([expect.objectContaining({ decision: 'approved' })]);
  });

  it('fails the step that tries to leave the allowed directory, with the server error', async () => {
    const outside = join(allowed, '..', 'escaped.txt');
    const plan: Plan = {
      id: 'plan_escape',
      version: 1,
      goal: 'Try to write outside the sandbox',
      steps: [
        { id: 'inside', tool: 'fs_list_allowed_directories', args: {} },
        // Not critical, so the run goes on and both refusals are recorded (critical is the dag default).
        { id: 'escape', tool: 'fs_write_file', args: { path: outside, content: 'gotcha' }, critical: false },
        { id: 'peek', tool: 'fs_read_text_file', args: { path: '/etc/passwd' }, critical: false },
        { id: 'after', tool: 'fs_list_directory', dependsOn: ['escape'], args: { path: allowed } },
      ],
    };
    const result = await engine().run(plan).result;
    const byId = new Map(result.steps.map((step) => [step.stepId, step]));
    expect(result.status).not.toBe('completed');
    expect(byId.get('inside')?.status).toBe('succeeded');
    for (const id of ['escape', 'peek']) {
      expect(byId.get(id)).toMatchObject({ status: 'failed', error: { code: 'E300', retryable: false } });
      expect(byId.get(id)?.error?.message).toContain('Access denied - path outside allowed directories');
    }
    expect(byId.get('after')?.status).toBe('skipped');
    expect(existsSync(outside)).toBe(false);
    const escaped = await store.getExecution(byId.get('escape')!.executionId);
    expect(escaped?.error?.message).toContain('Access denied');
  });
});
