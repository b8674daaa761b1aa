import { bubblewrapArguments, type OsSandboxOptions, sandboxEnvironment } from '@stepwise/core/engine';
import { type OsSandboxStatus, osSandboxStatus, type SandboxMode, sandboxUnavailable } from './os-sandbox.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

/**
 * How a command ran, in its result and so in the journal's `tool-result`: inside bubblewrap
 * (`kind: "bubblewrap"`) or with the argument rules alone (`kind: "none"`).
 */
export interface CommandSandboxRecord {
  readonly kind: 'bubblewrap' | 'none';
  /** Whether the command could reach the network (always true for `none`). */
  readonly network: boolean;
  /** For `none`: `off` (the host turned the OS sandbox off) or `unavailable` (it cannot start here). */
  readonly reason?: 'off' | 'unavailable';
  /** For `bubblewrap`: the command ran as an unprivileged uid (false only for a root host without a user namespace). */
  readonly unprivileged?: boolean;
}

/** Whether this call runs inside the OS sandbox; throws in `required` mode where it cannot start. */
export async function chooseSandbox(mode: SandboxMode): Promise<OsSandboxStatus | undefined> {
  if (mode === 'off') return undefined;
  const status = await osSandboxStatus();
  if (status.available) return status;
  if (mode === 'required') throw sandboxUnavailable(status);
  return undefined;
}

export interface Launch {
  readonly file: string;
  readonly args: string[];
  readonly argv0?: string;
  readonly env: Record<string, string>;
  readonly record: CommandSandboxRecord;
}

export interface LaunchRequest {
  readonly sandbox: WorkspaceSandbox;
  readonly status: OsSandboxStatus | undefined;
  readonly mode: SandboxMode;
  readonly options: OsSandboxOptions;
  readonly argv: readonly string[];
  /** The program, resolved on the child's PATH. */
  readonly file: string;
  readonly cwd: string;
  readonly env: Record<string, string>;
}

/** The program and arguments to start: bubblewrap around the command, or the command itself. */
export async function launchOf(request: LaunchRequest): Promise<Launch> {
  const { status, argv, file } = request;
  if (!status?.program) {
    return {
      file,
      args: argv.slice(1),
      argv0: argv[0] as string,
      env: request.env,
      record: { kind: 'none', network: true, reason: request.mode === 'off' ? 'off' : 'unavailable' },
    };
  }
  const workspace = await request.sandbox.realRoot();
  const guarded = await request.sandbox.protectedPaths();
  const features = status.features ?? { userNamespace: false, disableUserNamespaces: false };
  const args = bubblewrapArguments({
    workspace,
    pathVariable: request.env.PATH ?? request.env.Path ?? '',
    file,
    cwd: request.cwd,
    features,
    options: { ...request.options, protectedPaths: [...guarded.given, ...(request.options.protectedPaths ?? [])] },
  });
  const network = request.options.network === true;
  const unprivileged = features.userNamespace || process.getuid?.() !== 0;
  return {
    file: status.program,
    args: [...args, '--', file, ...argv.slice(1)],
    // A private, empty home and temp directory: nothing the host keeps there is visible or writable.
    env: sandboxEnvironment(request.env),
    record: { kind: 'bubblewrap', network, unprivileged },
  };
}
