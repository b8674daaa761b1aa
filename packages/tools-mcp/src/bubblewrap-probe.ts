import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { type BubblewrapFeatures, bubblewrapProbeArguments } from '@stepwise/core/engine';

/** Whether the OS sandbox can start here, and how strong it is. */
export interface BubblewrapStatus {
  readonly available: boolean;
  /** The bubblewrap program, when found. */
  readonly program?: string;
  /** What it can do here, when available. */
  readonly features?: BubblewrapFeatures;
  /** Why it cannot start, naming what to install or enable. */
  readonly reason?: string;
}

const PROBE_TIMEOUT_MS = 5000;
/** One probe per PATH value: finding and starting bubblewrap costs a few process starts. */
const probes = new Map<string, Promise<BubblewrapStatus>>();

/** `name` as the kernel would run it: a path (relative to `cwd`) or the first executable match on `pathVariable`. */
export function findExecutable(name: string, pathVariable: string, cwd: string): string | undefined {
  const candidates = name.includes('/')
    ? [path.resolve(cwd, name)]
    : pathVariable
        .split(path.delimiter)
        .filter((directory) => path.isAbsolute(directory))
        .map((directory) => path.join(directory, name));
  return candidates.find((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Starts `true` under bubblewrap; resolves to why it failed, or undefined. */
function tryStart(program: string, args: readonly string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(program, [...args, '--', 'true'], { stdio: ['ignore', 'ignore', 'pipe'] });
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

async function probe(pathVariable: string): Promise<BubblewrapStatus> {
  if (process.platform !== 'linux') {
    return {
      available: false,
      reason: `the OS sandbox uses bubblewrap (Linux); there is none for ${process.platform}`,
    };
  }
  const program = findExecutable('bwrap', pathVariable, '/');
  if (!program) {
    return {
      available: false,
      reason:
        'bubblewrap is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)',
    };
  }
  // The strongest set-up that starts: a user namespace refusing nested ones (bubblewrap 0.8+),
  // a user namespace, then whatever a setuid bubblewrap gives without one.
  let firstFailure: string | undefined;
  for (const features of [
    { userNamespace: true, disableUserNamespaces: true },
    { userNamespace: true, disableUserNamespaces: false },
    { userNamespace: false, disableUserNamespaces: false },
  ]) {
    const failure = await tryStart(program, bubblewrapProbeArguments(features));
    if (failure === undefined) return { available: true, program, features };
    firstFailure ??= failure;
  }
  return {
    available: false,
    program,
    reason: `bubblewrap (${program}) cannot create its namespaces: ${firstFailure}. Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu 24.04+), or run in a container that permits them`,
  };
}

/** Whether bubblewrap starts here; probed once per process and PATH. */
export function bubblewrapStatus(pathVariable = process.env.PATH ?? ''): Promise<BubblewrapStatus> {
  let status = probes.get(pathVariable);
  if (!status) {
    status = probe(pathVariable);
    probes.set(pathVariable, status);
  }
  return status;
}
