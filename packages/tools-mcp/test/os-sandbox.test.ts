import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToolRegistry } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bubblewrapStatus } from '../src/bubblewrap-probe.js';
import { type McpPlugin, type McpStdioOptions, type McpToolOutput, mcpTools } from '../src/index.js';
import { fixtureServer, runWithKernel } from './helpers.js';

/**
 * A real MCP server process (test/fixtures/sandbox-server.mjs) in `required` mode tries to
 * write, read, connect and look around; the same server with `sandbox: "off"` shows that
 * each attempt would have worked without the sandbox.
 */
const status = await bubblewrapStatus();
const skipped = status.available ? '' : ` — skipped: ${status.reason}`;
const token = randomBytes(6).toString('hex');
const SECRET = `home-secret-${token}`;
const PLANTED = path.join(homedir(), `.stepwise-mcp-planted-${token}`);
const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/', import.meta.url));

interface Probe {
  readonly ok: boolean;
  readonly error?: string;
  readonly text?: string;
  readonly status?: number;
  readonly body?: string;
  readonly pid?: number;
  readonly visible?: number[];
  readonly variables?: Record<string, string>;
}

/** One call of the fixture's tool, through the kernel; the tool's structured answer and the output. */
async function call(plugin: McpPlugin, tool: string, args: Record<string, unknown> = {}) {
  const registry = new ToolRegistry();
  await registry.use({ name: plugin.name, tools: plugin.tools });
  const result = await runWithKernel(makePlan([{ id: 'probe', tool, args }]), registry);
  const output = result.steps[0]?.output as McpToolOutput | undefined;
  if (!output) throw new Error(`${tool} failed: ${result.steps[0]?.error?.message}`);
  return { probe: output.structured as unknown as Probe, output };
}

function listen(body: string): Promise<{ server: Server; port: number }> {
  const server = createServer((_request, response) => response.end(body));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })),
  );
}

const servers: Server[] = [];
const plugins: McpPlugin[] = [];
let root = '';
let workspace = '';

async function start(options: Partial<McpStdioOptions>): Promise<McpPlugin> {
  const plugin = await mcpTools(fixtureServer('sandbox-server.mjs', { sandboxOptions: { workspace }, ...options }));
  plugins.push(plugin);
  return plugin;
}

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // Under the package, not /tmp: the workspace's parent is then an ordinary, visible directory.
  root = await realpath(await mkdtemp(path.join(ARTIFACTS, 'sandbox-')));
  workspace = path.join(root, 'workspace');
  await mkdir(workspace);
  await writeFile(PLANTED, SECRET);
});

afterAll(async () => {
  await Promise.all(plugins.map((plugin) => plugin.dispose()));
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await rm(PLANTED, { force: true });
  await rm(root, { recursive: true, force: true });
});

describe.skipIf(!status.available)(`an MCP server in the OS sandbox (required)${skipped}`, () => {
  let sandboxed: McpPlugin;
  let plain: McpPlugin;
  let loopback: { server: Server; port: number };

  beforeAll(async () => {
    sandboxed = await start({ sandbox: 'required' });
    plain = await start({ sandbox: 'off' });
    loopback = await listen('host loopback');
    servers.push(loopback.server);
  });

  it('records that it runs sandboxed, with no network, in every output', async () => {
    const { output } = await call(sandboxed, 'processes');
    expect(output.sandbox).toEqual({
      kind: 'bubblewrap',
      mode: 'required',
      network: false,
      writable: [workspace],
      unprivileged: true,
    });
    expect(sandboxed.sandbox).toEqual(output.sandbox);
    expect((await call(plain, 'processes')).output.sandbox).toEqual({
      kind: 'none',
      mode: 'off',
      network: true,
      reason: 'off',
    });
  });

  it('writes its workspace and nothing else', async () => {
    const inside = path.join(workspace, `inside-${token}`);
    expect((await call(sandboxed, 'write_file', { path: inside, text: 'ok' })).probe.ok).toBe(true);
    expect(existsSync(inside)).toBe(true);
    // The workspace's parent is read-only inside, unless it lies under /tmp (this checkout is there):
    // then it is part of the private /tmp, where a write lands and stays.
    const parent = path.join(root, `parent-${token}`);
    const parentHidden = !path.relative(await realpath(tmpdir()), root).startsWith('..');
    const refused = [...(parentHidden ? [] : [parent]), `/etc/stepwise-${token}`];
    const unseen = [
      ...(parentHidden ? [parent] : []),
      path.join(tmpdir(), `stepwise-escape-${token}`),
      path.join(homedir(), `.stepwise-escape-${token}`),
    ];
    for (const target of refused) {
      expect((await call(sandboxed, 'write_file', { path: target, text: 'escaped' })).probe).toEqual({
        ok: false,
        error: 'EROFS',
      });
    }
    // /tmp and the home directory are private, empty places inside: whatever lands there stays there.
    for (const target of unseen) await call(sandboxed, 'write_file', { path: target, text: 'escaped' });
    for (const target of [...refused, ...unseen]) expect(existsSync(target), target).toBe(false);
    // Without the sandbox the same write reaches the parent directory.
    const control = path.join(root, `control-${token}`);
    expect((await call(plain, 'write_file', { path: control, text: 'ok' })).probe.ok).toBe(true);
    expect(existsSync(control)).toBe(true);
  });

  it('does not see the real home directory', async () => {
    expect((await call(sandboxed, 'read_file', { path: PLANTED })).probe).toEqual({ ok: false, error: 'ENOENT' });
    expect((await call(sandboxed, 'environment')).probe.variables?.HOME).toBe('/tmp/.stepwise-home');
    expect((await call(plain, 'read_file', { path: PLANTED })).probe).toEqual({ ok: true, text: SECRET });
  });

  it('reaches no network: not the host loopback, not an outside address', async () => {
    const local = await call(sandboxed, 'connect', { host: '127.0.0.1', port: loopback.port });
    expect(local.probe).toEqual({ ok: false, error: 'ECONNREFUSED' });
    const outside = await call(sandboxed, 'connect', { host: '1.1.1.1', port: 443 });
    expect(outside.probe.ok).toBe(false);
    expect(outside.probe.error).toBe('ENETUNREACH');
    expect((await call(plain, 'connect', { host: '127.0.0.1', port: loopback.port })).probe.ok).toBe(true);
  });

  it('refuses a workspace that holds the home directory (a host started from ~ or /)', async () => {
    for (const cwd of [homedir(), '/']) {
      await expect(start({ sandbox: 'required', cwd, sandboxOptions: {} })).rejects.toMatchObject({
        code: 'E601',
        location: '/sandboxOptions/workspace',
        message: expect.stringContaining('holds the home directory'),
      });
    }
  });

  it('runs in its own pid namespace', async () => {
    const { probe } = await call(sandboxed, 'processes');
    expect(probe.pid).not.toBe(sandboxed.pid);
    expect(probe.visible).not.toContain(process.pid);
    expect(probe.visible?.length).toBeLessThan(5);
    expect((await call(plain, 'processes')).probe.visible).toContain(process.pid);
  });
});

describe.skipIf(!status.available)(`allowHosts: egress through the plugin's proxy${skipped}`, () => {
  let plugin: McpPlugin;
  let allowed: { server: Server; port: number };
  let other: { server: Server; port: number };
  const warnings: string[] = [];
  const proxyDirectories = async () =>
    (await readdir(tmpdir())).filter((name) => name.startsWith('stepwise-egress-')).sort();
  let before: string[] = [];

  beforeAll(async () => {
    allowed = await listen('allowed server');
    other = await listen('other server');
    servers.push(allowed.server, other.server);
    before = await proxyDirectories();
    plugin = await start({
      sandbox: 'required',
      sandboxOptions: { workspace, allowHosts: [`localhost:${allowed.port}`] },
      onWarning: (message) => warnings.push(message),
    });
  });

  it('reaches a listed host through the proxy, by CONNECT and by plain HTTP', async () => {
    const tunnel = await call(plugin, 'proxy_get', { host: 'localhost', port: allowed.port, tunnel: true });
    expect(tunnel.probe).toMatchObject({ ok: true, status: 200, body: 'allowed server' });
    expect(tunnel.output.sandbox).toMatchObject({
      kind: 'bubblewrap',
      network: false,
      allowHosts: [`localhost:${allowed.port}`],
      writable: [workspace],
    });
    const plainHttp = await call(plugin, 'proxy_get', { host: 'localhost', port: allowed.port, tunnel: false });
    expect(plainHttp.probe).toMatchObject({ ok: true, status: 200, body: 'allowed server' });
  });

  it('refuses every other host and port, the listed one by IP, and direct connections', async () => {
    for (const tunnel of [true, false]) {
      const elsewhere = await call(plugin, 'proxy_get', { host: 'localhost', port: other.port, tunnel });
      expect(elsewhere.probe).toMatchObject({ ok: false, status: 403 });
      expect(elsewhere.probe.body).toContain('not in allowHosts');
      const byAddress = await call(plugin, 'proxy_get', { host: '127.0.0.1', port: allowed.port, tunnel });
      expect(byAddress.probe).toMatchObject({ ok: false, status: 403 });
    }
    const direct = await call(plugin, 'connect', { host: '127.0.0.1', port: allowed.port });
    expect(direct.probe).toEqual({ ok: false, error: 'ECONNREFUSED' });
    expect(warnings.some((warning) => warning.includes(`refused a connection to localhost:${other.port}`))).toBe(true);
  });

  it('stops the proxy when the plugin is disposed', async () => {
    const running = await proxyDirectories();
    expect(running.length).toBe(before.length + 1);
    await plugin.dispose();
    expect(await proxyDirectories()).toEqual(before);
  });
});

describe('where bubblewrap cannot start (PATH without it)', () => {
  let savedPath: string | undefined;
  let emptyDirectory = '';

  beforeAll(async () => {
    savedPath = process.env.PATH;
    emptyDirectory = await mkdtemp(path.join(tmpdir(), 'stepwise-no-bwrap-'));
    process.env.PATH = emptyDirectory;
  });
  afterAll(async () => {
    process.env.PATH = savedPath;
    await rm(emptyDirectory, { recursive: true, force: true });
  });

  it('runs unsandboxed in "available" mode, with a warning and the reason recorded', async () => {
    const warnings: string[] = [];
    const plugin = await start({ onWarning: (message) => warnings.push(message) });
    const { probe, output } = await call(plugin, 'environment');
    expect(output.sandbox).toMatchObject({ kind: 'none', mode: 'available', network: true, reason: 'unavailable' });
    expect(output.sandbox?.detail).toContain('apt-get install bubblewrap');
    expect(probe.variables?.HOME).toBe(homedir());
    expect(warnings).toEqual([expect.stringContaining('runs without the OS sandbox (sandbox: "available")')]);
  });

  it('refuses to start a server in "required" mode (E402, naming the package to install)', async () => {
    for (const extra of [{}, { knownTools: [{ name: 'processes', inputSchema: { type: 'object' } }] }]) {
      await expect(start({ sandbox: 'required', ...extra })).rejects.toMatchObject({
        name: 'SandboxViolation',
        code: 'E402',
        message: expect.stringContaining('apt-get install bubblewrap'),
        details: { reason: 'os-sandbox-unavailable' },
      });
    }
  });
});

describe.skipIf(!status.available)(`a server installed under a directory the sandbox hides${skipped}`, () => {
  it('starts with its working directory and script under /tmp (a checkout there), shown read-only', async () => {
    // The layout of a project checked out under /tmp: the server in its node_modules, started
    // from the checkout, while the workspace is a directory of its own.
    const checkout = await realpath(await mkdtemp(path.join(tmpdir(), 'stepwise-mcp-checkout-')));
    const own = await realpath(await mkdtemp(path.join(tmpdir(), 'stepwise-mcp-workspace-')));
    try {
      const script = path.join(checkout, 'node_modules', 'fixture', 'bare-server.mjs');
      await mkdir(path.dirname(script), { recursive: true });
      await copyFile(fileURLToPath(new URL('./fixtures/bare-server.mjs', import.meta.url)), script);
      const plugin = await mcpTools({
        command: process.execPath,
        args: [script],
        cwd: checkout,
        sandbox: 'required',
        sandboxOptions: { workspace: own },
      });
      plugins.push(plugin);
      expect(plugin.sandbox?.kind).toBe('bubblewrap');
      expect(plugin.tools.map((tool) => tool.name)).toContain('echo');
      // Shown, not granted: the checkout stays read-only to the server.
      expect(plugin.sandbox?.writable).toEqual([own]);
    } finally {
      await rm(checkout, { recursive: true, force: true });
      await rm(own, { recursive: true, force: true });
    }
  });
});
