import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readAll } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { osSandboxStatus } from '@stepwise/tools-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertBuilt, createWorkspace, PACKAGE_DIRECTORY, parseJsonLines, runCli } from './helpers.js';

const REPOSITORY = path.resolve(PACKAGE_DIRECTORY, '..', '..');
const FILESYSTEM_SERVER = path.join(
  REPOSITORY,
  'node_modules',
  '@modelcontextprotocol',
  'server-filesystem',
  'dist',
  'index.js',
);
const sandbox = await osSandboxStatus();
const PLAN = { id: 'read', steps: [{ id: 'read', tool: 'file_read', args: { path: 'README.md' } }] };

describe('the configuration of the boundary', () => {
  let workspace: Awaited<ReturnType<typeof createWorkspace>>;
  beforeEach(async () => {
    assertBuilt();
    workspace = await createWorkspace({ 'plan.json': JSON.stringify(PLAN) });
  });
  afterEach(async () => {
    await workspace.dispose();
  });
  const stepwise = (args: readonly string[]) => runCli(args, { cwd: workspace.directory, timeoutMs: 60_000 });

  it('refuses checkArguments: false without sandbox "required", naming the file, line and option', async () => {
    const config = await workspace.write('stepwise.config.json', {
      commands: { allow: ['node'], checkArguments: false },
    });
    const refused = await stepwise(['validate', 'plan.json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${config}:6:5 /commands/checkArguments: "checkArguments": false`);
    expect(refused.stderr).toContain('"sandbox": "required"');
    await workspace.write('stepwise.config.json', {
      commands: { allow: ['node'], checkArguments: false, sandbox: 'off', unsafeNoBoundary: true },
    });
    expect((await stepwise(['validate', 'plan.json'])).code).toBe(0);
    await workspace.write('stepwise.config.json', {
      commands: { allow: ['node'], checkArguments: false, sandbox: 'required' },
    });
    expect((await stepwise(['validate', 'plan.json'])).code).toBe(0);
  });

  it("checks an MCP server's sandboxOptions with @stepwise/tools-mcp's own rules, at the line", async () => {
    const config = await workspace.write('stepwise.config.json', {
      plugins: [
        { mcp: { command: 'node', args: ['server.js'], sandboxOptions: { allowHosts: ['http://api.example.com'] } } },
      ],
    });
    const refused = await stepwise(['validate', 'plan.json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `${config.replaceAll('.', '\\.')}:\\d+:\\d+ /plugins/0/mcp/sandboxOptions/allowHosts/0: "http://api\\.example\\.com"`,
      ),
    );
    await workspace.write('stepwise.config.json', {
      plugins: [{ mcp: { command: 'node', sandbox: 'sometimes' } }],
    });
    const mode = await stepwise(['validate', 'plan.json']);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toContain('/plugins/0/mcp/sandbox');
  });

  it.skipIf(!sandbox.available || !existsSync(FILESYSTEM_SERVER))(
    'keeps a sandboxed MCP server from the journal and the configuration (--config and --db anywhere in the workspace)',
    async () => {
      const configFile = await workspace.write('ci/custom.json', {
        workspace: '..',
        approvals: { tools: { fs_write_file: 'auto' } },
        plugins: [
          {
            mcp: {
              command: process.execPath,
              // The server may write anywhere in the workspace, as far as it knows.
              args: [FILESYSTEM_SERVER, '..'],
              sandbox: 'required',
              sandboxOptions: { workspace: '..' },
            },
            prefix: 'fs_',
          },
        ],
      });
      const flags = ['--config', 'ci/custom.json', '--db', 'data/runs.db'];
      const database = path.join(workspace.directory, 'data', 'runs.db');
      const first = await stepwise(['run', 'plan.json', '--json', ...flags]);
      expect(first.code, first.stderr).toBe(0);
      const firstRunId = (parseJsonLines(first.stdout)[0] as { runId: string }).runId;
      const journal = async () => {
        const store = createSqliteStore({ path: database });
        try {
          return await readAll(store, firstRunId);
        } finally {
          await store.close();
        }
      };
      const before = await journal();
      const configBytes = await readFile(configFile);
      const write = (id: string, target: string) => ({
        id,
        tool: 'fs_write_file',
        args: { path: target, content: 'written by the MCP server' },
        // Each write runs to its own end: a refused one must not cancel the others in flight.
        critical: false,
      });
      await workspace.write('writes.json', {
        id: 'writes',
        steps: [
          write('scratch', path.join(workspace.directory, 'scratch.txt')),
          write('journal', database),
          write('config', configFile),
        ],
      });
      const outcome = await stepwise(['run', 'writes.json', '--json', ...flags]);
      const ends = parseJsonLines(outcome.stdout).filter((event) => event.type === 'step-end');
      const status = Object.fromEntries(
        ends.map((event) => [event.stepId, (event.result as { status: string }).status]),
      );
      expect(status, outcome.stderr).toEqual({ scratch: 'succeeded', journal: 'failed', config: 'failed' });
      expect(await readFile(path.join(workspace.directory, 'scratch.txt'), 'utf8')).toBe('written by the MCP server');
      expect(await journal()).toEqual(before);
      expect(await readFile(configFile)).toEqual(configBytes);
    },
    120_000,
  );
});
