import { spawn } from 'node:child_process';
import { constants, existsSync, lstatSync, statSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { SandboxViolation } from '@stepwise/core';

/**
 * `required`: every command runs inside the OS sandbox; where it cannot start, commands are
 * refused (E402, `details.reason: "os-sandbox-unavailable"`) with what to install. `available`: the OS sandbox when it can start, else
 * the argument rules alone. `off`: the argument rules alone.
 */
export type SandboxMode = 'required' | 'available' | 'off';

/** What the OS sandbox lets a command see and do. */
export interface OsSandboxOptions {
  /** Let commands use the network (the host's network namespace). Default false: no network at all. */
  readonly network?: boolean;
  /** More directories or files to hide (replaced by an empty directory or an empty file). */
  readonly hiddenPaths?: readonly string[];
  /** Directories under a hidden path to show again, read-only (a toolchain in the home directory). */
  readonly readablePaths?: readonly string[];
  /** More directories the command may write besides the workspace. */
  readonly writablePaths?: readonly string[];
}

/** Hidden by default: where other people's and the host's private files, temp files and sockets live. */
function defaultHidden(): string[] {
  return [
    '/home',
    '/root',
    homedir(),
    '/tmp',
    '/var/tmp',
    '/dev/shm',
    '/run',
    '/var/run',
    '/mnt',
    '/media',
    '/etc/shadow',
    '/etc/gshadow',
    '/etc/ssh',
    '/etc/sudoers',
    '/etc/sudoers.d',
  ];
}

/** The private home directory every sandboxed command gets (a fresh, empty directory in a private /tmp). */
export const SANDBOX_HOME = '/tmp/.stepwise-home';

const PROBE_TIMEOUT_MS = 5000;

export interface OsSandboxStatus {
  readonly available: boolean;
  /** The bubblewrap program, when found. */
  readonly program: string | undefined;
  /** Why it cannot start, naming what to install or enable. */
  readonly reason: string | undefined;
}

/** One probe per PATH value: finding and starting bubblewrap costs a process start. */
const probes = new Map<string, Promise<OsSandboxStatus>>();

async function findOnPath(name: string, pathVariable: string): Promise<string | undefined> {
  for (const directory of pathVariable.split(path.delimiter)) {
    if (!path.isAbsolute(directory)) continue;
    const candidate = path.join(directory, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

function tryStart(program: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    // The same namespaces and mounts a command gets: some containers allow namespaces but not a new /proc.
    const probeArguments = [...baseArguments(false), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
    const child = spawn(program, [...probeArguments, '--tmpfs', '/tmp', '--', 'true'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve(error.message);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve(code === 0 ? undefined : stderr.trim() || `exited with code ${code}`);
    });
  });
}

/**
 * Whether the OS sandbox can start here (checked once per process): Linux with bubblewrap
 * installed and namespaces it may create.
 */
export function osSandboxStatus(): Promise<OsSandboxStatus> {
  const pathVariable = process.env.PATH ?? '/usr/bin:/bin';
  let probe = probes.get(pathVariable);
  if (probe) return probe;
  probe = (async (): Promise<OsSandboxStatus> => {
    if (process.platform !== 'linux') {
      return {
        available: false,
        program: undefined,
        reason: `the OS sandbox uses Linux namespaces through bubblewrap; there is none for ${process.platform}`,
      };
    }
    const program = await findOnPath('bwrap', pathVariable);
    if (!program) {
      return {
        available: false,
        program: undefined,
        reason:
          'bubblewrap is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)',
      };
    }
    const failure = await tryStart(program);
    if (failure) {
      return {
        available: false,
        program,
        reason: `bubblewrap (${program}) cannot create its namespaces: ${failure}. Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu 24.04+), or run in a container that permits them`,
      };
    }
    return { available: true, program, reason: undefined };
  })();
  probes.set(pathVariable, probe);
  return probe;
}

/** The error `required` mode raises where the sandbox cannot start. */
export function sandboxUnavailable(status: OsSandboxStatus): SandboxViolation {
  return new SandboxViolation(
    `run_command refuses to run: the host requires the OS sandbox (sandbox: "required") and it cannot start: ${status.reason}`,
    { location: 'command/0', details: { reason: 'os-sandbox-unavailable' } },
  );
}

function baseArguments(network: boolean): string[] {
  return [
    // The sandbox dies with the host: no command outlives a killed host (PR_SET_PDEATHSIG).
    '--die-with-parent',
    '--unshare-user-try',
    '--unshare-ipc',
    // Its own pid namespace: when its first process dies the kernel kills every process in it,
    // including ones that left the process group.
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(network ? [] : ['--unshare-net']),
    '--cap-drop',
    'ALL',
  ];
}

function isDirectory(file: string): boolean | undefined {
  try {
    return statSync(file).isDirectory();
  } catch {
    return undefined;
  }
}

function inside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

export interface SandboxedCommand {
  /** The workspace (read-write). */
  readonly workspace: string;
  /** The child's PATH: entries inside hidden directories are shown again read-only. */
  readonly pathVariable: string;
  /** The program, so a toolchain under a hidden directory stays reachable. */
  readonly file: string;
  readonly cwd: string;
  readonly options: OsSandboxOptions;
}

/**
 * bubblewrap's arguments (before `--` and the command): the whole file system read-only,
 * private /dev, /proc and /tmp, the home directories, temp directories, sockets and credential
 * files hidden, the workspace read-write, a private empty HOME, no network unless allowed,
 * no capabilities and no new privileges (bubblewrap always sets PR_SET_NO_NEW_PRIVS).
 */
export function bubblewrapArguments(command: SandboxedCommand): string[] {
  const { options } = command;
  const args = [...baseArguments(options.network === true), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  for (const hidden of new Set([...defaultHidden(), ...(options.hiddenPaths ?? [])])) {
    const directory = isDirectory(hidden);
    if (directory === undefined) continue;
    // A symlink (/var/run → /run) is hidden through its target; the root cannot be hidden.
    if (hidden === '/' || lstatSync(hidden).isSymbolicLink()) continue;
    args.push(...(directory ? ['--tmpfs', hidden] : ['--ro-bind', '/dev/null', hidden]));
  }
  // Deepest first, so a toolchain is measured from the closest hidden directory above it.
  const hiddenDirectories = [...defaultHidden(), ...(options.hiddenPaths ?? [])]
    .filter((hidden) => isDirectory(hidden))
    .sort((a, b) => b.length - a.length);
  const shown = new Set<string>(options.readablePaths ?? []);
  const toolchain = [...command.pathVariable.split(path.delimiter), path.dirname(command.file)];
  for (const entry of toolchain) {
    if (!path.isAbsolute(entry) || !existsSync(entry)) continue;
    const hidden = hiddenDirectories.find((directory) => inside(entry, directory));
    if (hidden === undefined) continue;
    // `…/bin` of an installed toolchain needs its `…/lib` beside it (npm is bin/npm → ../lib/…), but
    // `~/bin` or `~/.local/bin` must not show the whole home or `~/.local`: only two levels down or more.
    const parent = path.dirname(entry);
    const depth = path.relative(hidden, parent).split(path.sep).filter(Boolean).length;
    shown.add(path.basename(entry) === 'bin' && depth >= 2 ? parent : entry);
  }
  for (const entry of shown) {
    if (inside(command.workspace, entry)) continue;
    if (existsSync(entry)) args.push('--ro-bind', entry, entry);
  }
  for (const entry of options.writablePaths ?? []) if (existsSync(entry)) args.push('--bind', entry, entry);
  args.push('--bind', command.workspace, command.workspace, '--dir', SANDBOX_HOME, '--chdir', command.cwd);
  return args;
}
