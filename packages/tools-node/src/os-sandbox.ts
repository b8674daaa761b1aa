import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { SandboxViolation } from '@stepwise/core';
import { type BubblewrapFeatures, bubblewrapProbeArguments } from '@stepwise/core/engine';

export {
  type BubblewrapFeatures,
  bubblewrapArguments,
  type OsSandboxOptions,
  SANDBOX_HOME,
  type SandboxedProcess as SandboxedCommand,
} from '@stepwise/core/engine';

/**
 * `required`: every command runs inside the OS sandbox; where it cannot start, commands are
 * refused (E402, `details.reason: "os-sandbox-unavailable"`) with what to install. `available`: the OS sandbox when it can start, else
 * the argument rules alone. `off`: the argument rules alone.
 */
export type SandboxMode = 'required' | 'available' | 'off';

const PROBE_TIMEOUT_MS = 5000;

export interface OsSandboxStatus {
  readonly available: boolean;
  /** The bubblewrap program, when found. */
  readonly program: string | undefined;
  /** Why it cannot start, naming what to install or enable. */
  readonly reason: string | undefined;
  /** What it can do here (a user namespace, refusing nested namespaces), when available. */
  readonly features: BubblewrapFeatures | undefined;
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

/**
 * The strongest set-up that starts: a user namespace that refuses nested ones, then a user
 * namespace alone (bubblewrap before 0.8), then whatever `--unshare-user-try` gives (a setuid
 * bubblewrap where unprivileged user namespaces are off). The kernel mounts (/proc read-only)
 * are in every one; when none starts, the first failure says why.
 */
async function strongestFeatures(program: string): Promise<{ features?: BubblewrapFeatures; failure?: string }> {
  const candidates: BubblewrapFeatures[] = [
    { userNamespace: true, disableUserNamespaces: true },
    { userNamespace: true, disableUserNamespaces: false },
    { userNamespace: false, disableUserNamespaces: false },
  ];
  let firstFailure: string | undefined;
  for (const features of candidates) {
    const failure = await tryStart(program, bubblewrapProbeArguments(features));
    if (failure === undefined) return { features };
    firstFailure ??= failure;
  }
  return { failure: firstFailure ?? 'it did not start' };
}

/**
 * Whether the OS sandbox can start here (checked once per process and PATH): Linux with
 * bubblewrap installed and namespaces it may create. `features` says how strong it is.
 */
export function osSandboxStatus(): Promise<OsSandboxStatus> {
  const pathVariable = process.env.PATH ?? '/usr/bin:/bin';
  let probe = probes.get(pathVariable);
  if (probe) return probe;
  probe = (async (): Promise<OsSandboxStatus> => {
    const unavailable = (program: string | undefined, reason: string): OsSandboxStatus => ({
      available: false,
      program,
      reason,
      features: undefined,
    });
    if (process.platform !== 'linux') {
      return unavailable(
        undefined,
        `the OS sandbox uses Linux namespaces through bubblewrap; there is none for ${process.platform}`,
      );
    }
    const program = await findOnPath('bwrap', pathVariable);
    if (!program) {
      return unavailable(
        undefined,
        'bubblewrap is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)',
      );
    }
    const { features, failure } = await strongestFeatures(program);
    if (!features) {
      return unavailable(
        program,
        `bubblewrap (${program}) cannot create its namespaces: ${failure}. Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu 24.04+), or run in a container that permits them`,
      );
    }
    return { available: true, program, reason: undefined, features };
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
