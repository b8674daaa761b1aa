import { realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { ErrorCodes, SandboxViolation, StepwiseError } from '@stepwise/core';
import { bubblewrapArguments, sandboxEnvironment, secretEnvironmentValues } from '@stepwise/core/engine';
import { type BubblewrapStatus, bubblewrapStatus, findExecutable } from './bubblewrap-probe.js';
import { childEnvironment } from './child-environment.js';
import { type HostPattern, parseHostPattern } from './host-allow-list.js';
import type { McpStdioOptions } from './mcp-options.js';
import { bridgedCommand, EGRESS_SOCKET } from './sandbox-bridge.js';
import type { McpSandboxMode } from './sandbox-options.js';

/**
 * How a stdio server runs, journaled with every call's output (`output.sandbox`). The fields
 * `kind`, `network`, `reason` and `unprivileged` mean what they mean in `run_command`'s record.
 */
export interface McpSandboxStatus {
  /** `bubblewrap`: inside the OS sandbox; `none`: an ordinary child process. */
  readonly kind: 'bubblewrap' | 'none';
  /** The mode asked for. */
  readonly mode: McpSandboxMode;
  /**
   * Whether it can open connections of its own: true for `none` and for `network: true`. False in
   * the sandbox otherwise; with `allowHosts` it then reaches those hosts only, through the proxy.
   */
  readonly network: boolean;
  /** The hosts it may reach through the egress proxy. */
  readonly allowHosts?: readonly string[];
  /** The directories it may write (`bubblewrap` only). */
  readonly writable?: readonly string[];
  /** For `bubblewrap`: it runs as an unprivileged uid (false only for a root host without a user namespace). */
  readonly unprivileged?: boolean;
  /** For `none`: `off` (the host turned the OS sandbox off) or `unavailable` (it cannot start here). */
  readonly reason?: 'off' | 'unavailable';
  /** For `unavailable`: why, naming what to install or enable. */
  readonly detail?: string;
}

/** What to spawn for one start of a stdio server. */
export interface ServerLaunch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  readonly sandbox: McpSandboxStatus;
  /** Values in the server's environment whose names look secret: scrubbed from what it sends back. */
  readonly secrets: readonly string[];
}

/** Starts (or reuses) the egress proxy for these hosts and returns its socket. */
export type EgressStarter = (hosts: readonly HostPattern[]) => Promise<string>;

/** The E402 a server in `required` mode gets where the OS sandbox cannot start. */
export function sandboxUnavailable(label: string, status: BubblewrapStatus): SandboxViolation {
  return new SandboxViolation(
    `MCP server ${label} was not started: it requires the OS sandbox (sandbox: "required") and that cannot start here: ${status.reason}`,
    { location: label, details: { reason: 'os-sandbox-unavailable' } },
  );
}

/** The sandbox's status where bubblewrap is usable, or throws in `required` mode where it is not. */
export async function sandboxReady(options: McpStdioOptions, label: string): Promise<BubblewrapStatus | undefined> {
  if ((options.sandbox ?? 'available') === 'off') return undefined;
  const status = await bubblewrapStatus();
  if (!status.available && options.sandbox === 'required') throw sandboxUnavailable(label, status);
  return status;
}

/**
 * The command line, environment and sandbox status of one start of a stdio server: the
 * environment from the allowlist (as for commands), and in the OS sandbox unless the mode
 * is `off` or (in `available` mode) bubblewrap cannot start here.
 */
export async function serverLaunch(
  options: McpStdioOptions,
  label: string,
  egress: EgressStarter,
): Promise<ServerLaunch> {
  const env = childEnvironment(options.env, options.envAllow);
  const secrets = secretEnvironmentValues(env);
  const mode = options.sandbox ?? 'available';
  const status = await sandboxReady(options, label);
  if (status?.available) return { ...(await sandboxedLaunch(options, mode, status, env, egress)), secrets };
  return {
    command: options.command,
    args: [...(options.args ?? [])],
    env,
    secrets,
    sandbox: {
      kind: 'none',
      mode,
      network: true,
      ...(status ? { reason: 'unavailable', detail: status.reason ?? 'it did not start' } : { reason: 'off' }),
    },
  };
}

/**
 * What the server needs to start, shown read-only wherever it is (under /tmp, which the sandbox
 * hides, for a project checked out there): its working directory when that is outside the
 * workspace, and each script named by an absolute path in its arguments, with the nearest
 * `package.json` and every `node_modules` Node would search from it, so its imports resolve.
 */
async function launchPaths(workspace: string, cwd: string, args: readonly string[]): Promise<string[]> {
  const paths = path.relative(workspace, cwd).startsWith('..') ? [cwd] : [];
  for (const arg of args) {
    if (!path.isAbsolute(arg)) continue;
    // Files only: a directory argument (a filesystem server's root) is the workspace's to grant.
    const file = await realpath(arg).catch(() => undefined);
    if (file === undefined || !(await stat(file)).isFile()) continue;
    paths.push(file, ...(await moduleLookup(path.dirname(file))));
  }
  return paths;
}

/** The `node_modules` directories Node searches from `directory`, and the nearest `package.json`. */
async function moduleLookup(directory: string): Promise<string[]> {
  const found: string[] = [];
  let manifest = false;
  for (let current = directory; ; current = path.dirname(current)) {
    const modules = path.join(current, 'node_modules');
    if (path.basename(current) !== 'node_modules' && (await isDirectory(modules))) found.push(modules);
    if (!manifest && (await isFile(path.join(current, 'package.json')))) {
      found.push(path.join(current, 'package.json'));
      manifest = true;
    }
    if (path.dirname(current) === current) return found;
  }
}

const isDirectory = (target: string) =>
  stat(target).then(
    (entry) => entry.isDirectory(),
    () => false,
  );
const isFile = (target: string) =>
  stat(target).then(
    (entry) => entry.isFile(),
    () => false,
  );

async function sandboxedLaunch(
  options: McpStdioOptions,
  mode: McpSandboxMode,
  status: BubblewrapStatus,
  env: Record<string, string>,
  egress: EgressStarter,
): Promise<Omit<ServerLaunch, 'secrets'>> {
  const settings = options.sandboxOptions ?? {};
  const cwd = await realpath(options.cwd ?? process.cwd());
  const workspace = await realpath(path.resolve(cwd, settings.workspace ?? '.'));
  const home = await realpath(homedir()).catch(() => homedir());
  if (!path.relative(workspace, home).startsWith('..')) {
    // A host started from its home directory (or /) would otherwise hand the server every key in it.
    throw new StepwiseError(
      ErrorCodes.CONFIG_INVALID,
      `MCP server ${options.command}: the sandbox workspace ${workspace} holds the home directory ${home}; give sandboxOptions.workspace (or cwd) a project directory`,
      { location: '/sandboxOptions/workspace' },
    );
  }
  const absolute = (list: readonly string[] | undefined) => (list ?? []).map((entry) => path.resolve(cwd, entry));
  const file = findExecutable(options.command, env.PATH ?? '', cwd);
  // The message spawn gives, so a missing server reads the same with and without the sandbox.
  if (!file) throw Object.assign(new Error(`spawn ${options.command} ENOENT`), { code: 'ENOENT' });
  const hosts = (settings.allowHosts ?? []).map((entry) => parseHostPattern(entry) as HostPattern);
  const socket = hosts.length > 0 ? await egress(hosts) : undefined;
  const writable = [workspace, ...absolute(settings.writablePaths)];
  const bubblewrap = bubblewrapArguments({
    workspace,
    cwd,
    file,
    // Behind the bridge, this Node runs first: its installation is shown like the server's.
    pathVariable: [...(socket ? [path.dirname(process.execPath)] : []), env.PATH ?? ''].join(path.delimiter),
    options: {
      network: settings.network === true,
      hiddenPaths: absolute(settings.hiddenPaths),
      readablePaths: [...absolute(settings.readablePaths), ...(await launchPaths(workspace, cwd, options.args ?? []))],
      writablePaths: writable.slice(1),
      protectedPaths: absolute(settings.protectedPaths),
      ...(settings.gitConfig === undefined ? {} : { gitConfig: settings.gitConfig }),
    },
    ...(status.features ? { features: status.features } : {}),
  });
  const args = options.args ?? [];
  return {
    command: status.program as string,
    args: [
      ...bubblewrap,
      ...(socket ? ['--ro-bind', socket, EGRESS_SOCKET] : []),
      '--',
      ...(socket ? bridgedCommand(file, args) : [file, ...args]),
    ],
    env: sandboxEnvironment(env),
    sandbox: {
      kind: 'bubblewrap',
      mode,
      network: settings.network === true,
      ...(socket ? { allowHosts: hosts.map((host) => host.entry) } : {}),
      writable,
      unprivileged: status.features?.userNamespace === true || process.getuid?.() !== 0,
    },
  };
}
