import { constants as fileConstants } from 'node:fs';
import { access, lstat, realpath, stat } from 'node:fs/promises';
import { constants } from 'node:os';
import path from 'node:path';
import { defineTool, type ErrorCode, ErrorCodes, SandboxViolation, StepwiseError, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { childEnvironment } from './child-environment.js';
import { type CommandSandboxRecord, chooseSandbox, type Launch, launchOf } from './command-launch.js';
import { type CommandPolicy, checkCommand, executableName, pathArguments } from './command-policy.js';
import { liveCommandOutput, scrub } from './live-command-output.js';
import type { OsSandboxOptions, SandboxMode } from './os-sandbox.js';
import type { ProtectedChanges } from './protected-paths.js';
import { type ProcessResult, type RunProcessOptions, runProcess } from './run-process.js';
import type { WorkspaceSandbox } from './workspace-sandbox.js';

/** How `run_command` runs programs. Every member is optional except `allow`. */
export interface CommandOptions extends CommandPolicy {
  readonly env?: {
    /** Host environment variables (names or `PREFIX_*`) passed to commands on top of the base set; also the names a plan may set. */
    readonly allow?: readonly string[];
  };
  /** Default timeout when the call gives none. Default 120 000 ms. */
  readonly timeoutMs?: number;
  /** Longest timeout a call may ask for. Default 30 minutes. */
  readonly maxTimeoutMs?: number;
  /** Cap per stream (stdout, stderr) in bytes. Default 1 MiB. */
  readonly maxOutputBytes?: number;
  /** Grace between SIGTERM and SIGKILL when a command is stopped. Default 2000 ms. */
  readonly killGraceMs?: number;
  /**
   * The OS sandbox (bubblewrap on Linux): `required` refuses commands where it cannot start,
   * `available` uses it where it can, `off` never does. Default `available`.
   */
  readonly sandbox?: SandboxMode;
  /** What the OS sandbox lets commands see and do (network, extra hidden, readable, writable or protected paths, git config). */
  readonly sandboxOptions?: OsSandboxOptions;
  /**
   * Acknowledge that `checkArguments: false` without `sandbox: "required"` may run commands with
   * no boundary at all (where the OS sandbox is off or cannot start). Without it that combination
   * is refused when the tool is made (E601).
   */
  readonly unsafeNoBoundary?: boolean;
}

const commandSchema = z
  .array(z.string(), {
    error: (issue) =>
      typeof issue.input === 'string'
        ? 'pass the command as argv (an array: ["git", "log", "--oneline"]), not a shell string; there is no shell'
        : undefined,
  })
  .min(1, 'the command is empty: pass argv, e.g. ["git", "status"]');

export const runCommandInput = z.object({
  command: commandSchema.describe(
    'argv: the executable then its arguments, e.g. ["git", "log", "--oneline"]. No shell.',
  ),
  cwd: z.string().optional().describe('Working directory relative to the workspace. Default ".".'),
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('Stop the command (and everything it started) after this long.'),
  stdin: z.string().optional().describe("Text written to the command's standard input."),
  env: z
    .record(z.string(), z.string())
    .optional()
    .describe('Extra environment variables (only names the host allows).'),
});

export interface RunCommandOutput {
  readonly command: string[];
  readonly cwd: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
  /** Whether and how it ran sandboxed: `{ kind: "bubblewrap" | "none", network, … }`. */
  readonly sandbox: CommandSandboxRecord;
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, fileConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds the program: a bare name on the child's PATH (absolute entries outside the
 * workspace only, so a planted `./git` is never picked), a listed absolute path, or a
 * listed relative path inside the workspace.
 */
async function resolveExecutable(executable: string, pathVariable: string, sandbox: WorkspaceSandbox): Promise<string> {
  const notFound = (why: string) =>
    new ToolError({ code: ErrorCodes.TOOL_EXECUTABLE, message: `${executable}: ${why}`, location: 'command/0' });
  if (/[\\/]/.test(executable)) {
    const file = path.isAbsolute(executable) ? executable : (await sandbox.resolve(executable)).absolute;
    if (await isExecutableFile(file)) return file;
    throw notFound('not an executable file');
  }
  const extensions =
    process.platform === 'win32' ? ['', ...(process.env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';')] : [''];
  for (const directory of pathVariable.split(path.delimiter)) {
    if (!directory || !path.isAbsolute(directory)) continue;
    const real = await realpath(directory).catch(() => undefined);
    if (real === undefined || (await sandbox.contains(real))) continue;
    for (const extension of extensions) {
      const candidate = path.join(directory, executable + extension);
      if (await isExecutableFile(candidate)) return candidate;
    }
  }
  throw notFound('not found on PATH');
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
}

/** The path the kernel reaches: each `..` climbs from where the symlinks before it really lead. */
async function physicalPath(cwd: string, value: string): Promise<string> {
  let current = path.isAbsolute(value) ? path.parse(value).root : cwd;
  for (const segment of value.split(/[\\/]+/)) {
    if (segment === '' || segment === '.') continue;
    current = segment === '..' ? path.dirname(current) : path.join(current, segment);
    if (segment !== '..') current = (await realpath(current).catch(() => undefined)) ?? current;
  }
  return current;
}

function refuseByPolicy(argv: readonly string[], policy: CommandPolicy, stdin: boolean): void {
  const refusal = checkCommand(argv, policy, { stdin });
  if (!refusal) return;
  if (refusal.code === ErrorCodes.SANDBOX_VIOLATION) {
    throw new SandboxViolation(refusal.message, {
      location: `command/${refusal.index}`,
      details: { argument: argv[refusal.index] },
    });
  }
  throw new ToolError({ code: refusal.code, message: refusal.message, location: `command/${refusal.index}` });
}

async function workingDirectory(sandbox: WorkspaceSandbox, cwd: string | undefined) {
  const resolved = await sandbox.resolve(cwd ?? '.');
  const stats = await stat(resolved.absolute).catch(() => undefined);
  if (!stats?.isDirectory()) {
    throw new ToolError({
      code: ErrorCodes.TOOL_NOT_FOUND,
      message: `the working directory ${cwd} is not a directory`,
      location: 'cwd',
    });
  }
  return resolved;
}

async function checkPathArguments(sandbox: WorkspaceSandbox, argv: readonly string[], cwd: string): Promise<void> {
  for (const { index, value, always } of pathArguments(argv)) {
    // Absolute, `~`, drive and UNC forms go to the sandbox as written, so it refuses them by their form.
    const lexical = /^([A-Za-z]:|[\\/~])/.test(value) ? value : path.join(cwd, value);
    // `glink/../x` climbs from the symlink's target, not from `glink`'s directory: follow it as the kernel will.
    const target =
      !value.startsWith('~') && /(^|[\\/])\.\.([\\/]|$)/.test(value) ? await physicalPath(cwd, value) : lexical;
    if (!always && !(await exists(target))) continue;
    try {
      await sandbox.resolve(target);
    } catch (error) {
      if (StepwiseError.isInstance(error) && error.code === ErrorCodes.SANDBOX_VIOLATION) {
        const isProtected = (error.details as { reason?: string } | undefined)?.reason === 'protected';
        throw new SandboxViolation(
          `argument ${index} (${JSON.stringify(value)}) refers to ${isProtected ? 'a protected path' : 'a path outside the workspace'}`,
          {
            location: `command/${index}`,
            details: { argument: argv[index], ...(isProtected ? { reason: 'protected' } : {}) },
          },
        );
      }
      throw error;
    }
  }
}

/**
 * bubblewrap reports a command killed by a signal as exit code 128 + the signal's number, as
 * shells do; turn it back into the signal so the output reads the same with and without it.
 */
function signalFromExitCode(result: ProcessResult): ProcessResult {
  if (result.signal !== null || result.exitCode === null || result.exitCode <= 128) return result;
  const entry = Object.entries(constants.signals).find(([, number]) => number === (result.exitCode as number) - 128);
  return entry ? { ...result, exitCode: null, signal: entry[0] as NodeJS.Signals } : result;
}

/** Turns a finished process into the tool's output, or the ToolError that says why it failed. */
function commandOutcome(
  argv: readonly string[],
  cwd: string,
  result: ProcessResult,
  secrets: readonly string[],
  timeoutMs: number,
  sandbox: CommandSandboxRecord,
): { output: RunCommandOutput; error?: ToolError } {
  const stdout = scrub(result.stdout, secrets);
  const stderr = scrub(result.stderr, secrets);
  const output: RunCommandOutput = {
    command: [...argv],
    cwd,
    exitCode: result.exitCode,
    signal: result.signal,
    stdout,
    stderr,
    stdoutTruncated: result.stdoutTruncated,
    stderrTruncated: result.stderrTruncated,
    durationMs: Math.round(result.durationMs),
    sandbox,
  };
  const details = { exitCode: result.exitCode, signal: result.signal, stdout, stderr, sandbox };
  const fail = (code: ErrorCode, message: string, extra: Record<string, unknown> = {}) => ({
    output,
    error: new ToolError({ code, message, location: 'command', details: { ...details, ...extra } }),
  });
  if (result.aborted) return fail(ErrorCodes.STEP_CANCELLED, `${argv[0]} was stopped: the step was cancelled`);
  if (result.timedOut) {
    return fail(
      ErrorCodes.STEP_TIMEOUT,
      `${argv[0]} timed out after ${timeoutMs} ms; it and every process it started were killed`,
      { timedOut: true },
    );
  }
  if (result.exitCode !== 0) {
    const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
    const lastLine = stderr.trim().split('\n').pop() ?? '';
    return fail(
      ErrorCodes.TOOL_COMMAND_FAILED,
      `${argv.join(' ')} ${how}${lastLine ? `: ${lastLine.slice(0, 500)}` : ''}`,
    );
  }
  return { output };
}

/** Starts the launch; a program that cannot start is E303. */
async function startProcess(
  launch: Launch,
  argv: readonly string[],
  options: Omit<RunProcessOptions, 'file' | 'args' | 'argv0' | 'env'>,
): Promise<ProcessResult> {
  try {
    return await runProcess({
      file: launch.file,
      args: launch.args,
      ...(launch.argv0 === undefined ? {} : { argv0: launch.argv0 }),
      env: launch.env,
      ...options,
    });
  } catch (error) {
    throw new ToolError({
      code: ErrorCodes.TOOL_EXECUTABLE,
      message: `${argv[0]} could not be started: ${error instanceof Error ? error.message : error}`,
      location: 'command/0',
    });
  }
}

/** A command that created or replaced a protected path fails, whatever its exit code. */
function protectedChanged(
  argv: readonly string[],
  changes: ProtectedChanges,
  output: RunCommandOutput,
): SandboxViolation {
  const names = [...changes.created, ...changes.replaced].join(', ');
  return new SandboxViolation(
    `${argv[0]} changed protected paths (${names}): a created one was moved aside (${changes.quarantined.join(', ') || 'none'}), a replaced one cannot be trusted`,
    {
      location: 'command',
      details: {
        reason: 'protected',
        ...changes,
        stdout: output.stdout,
        stderr: output.stderr,
        sandbox: output.sandbox,
      },
    },
  );
}

/** `checkArguments: false` is a boundary only with the OS sandbox required, unless the host says it knows. */
function checkBoundary(options: CommandOptions, mode: SandboxMode): void {
  if (options.checkArguments !== false || mode === 'required' || options.unsafeNoBoundary === true) return;
  throw new StepwiseError(
    ErrorCodes.CONFIG_INVALID,
    `commands.checkArguments: false with sandbox "${mode}" runs commands with no boundary at all wherever the OS sandbox is off or cannot start; set sandbox: "required", or unsafeNoBoundary: true to accept that`,
    { location: 'commands.checkArguments' },
  );
}

/**
 * `run_command`: runs an allowlisted program with argv (no shell) inside the workspace, and
 * inside the OS sandbox where there is one. Refuses dangerous arguments per executable,
 * builds the environment from an allowlist, kills the whole process tree on timeout, caps
 * output, journals the process group (so resume can kill what a crash left running), and
 * fails (E304) on a non-zero exit.
 */
export function runCommandTool(sandbox: WorkspaceSandbox, options: CommandOptions) {
  const policy: CommandPolicy = options;
  const defaultTimeout = options.timeoutMs ?? 120_000;
  const maxTimeout = options.maxTimeoutMs ?? 30 * 60_000;
  const mode = options.sandbox ?? 'available';
  checkBoundary(options, mode);
  return defineTool({
    name: 'run_command',
    description: `Run a program in the workspace with argv (no shell), e.g. ["git", "status"]. Allowed executables: ${options.allow.join(', ') || 'none'}. Fails when the exit code is not 0; stdout and stderr are returned either way.`,
    input: runCommandInput,
    effect: 'exec',
    idempotent: false,
    async execute(input, context): Promise<RunCommandOutput> {
      const argv = input.command;
      refuseByPolicy(argv, policy, input.stdin !== undefined);
      const status = await chooseSandbox(mode);
      const cwd = await workingDirectory(sandbox, input.cwd);
      if (policy.checkArguments !== false) await checkPathArguments(sandbox, argv, cwd.absolute);
      const { env, secrets } = childEnvironment({
        ...(options.env?.allow ? { allow: options.env.allow } : {}),
        ...(input.env ? { requested: input.env } : {}),
        executable: executableName(argv[0] as string),
      });
      const file = await resolveExecutable(argv[0] as string, env.PATH ?? env.Path ?? '', sandbox);
      const launch = await launchOf({
        sandbox,
        status,
        mode,
        options: options.sandboxOptions ?? {},
        argv,
        file,
        cwd: cwd.absolute,
        env,
      });
      const timeoutMs = Math.min(input.timeoutMs ?? defaultTimeout, maxTimeout);
      const guarded = await sandbox.protectedPaths();
      const before = guarded.snapshot();
      const live = context.output ? liveCommandOutput(context.output, secrets) : undefined;
      let result = await startProcess(launch, argv, {
        cwd: cwd.absolute,
        ...(input.stdin === undefined ? {} : { stdin: input.stdin }),
        timeoutMs,
        maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
        killGraceMs: options.killGraceMs ?? 2000,
        signal: context.signal,
        onSpawn: (pid) => context.recordProcess?.({ pid, processGroup: pid, command: [...argv] }),
        ...(live ? { onOutput: live.write } : {}),
      }).finally(() => live?.end());
      if (launch.record.kind === 'bubblewrap') result = signalFromExitCode(result);
      const outcome = commandOutcome(
        argv,
        cwd.relative === '' ? '.' : cwd.relative,
        result,
        secrets,
        timeoutMs,
        launch.record,
      );
      if (outcome.output.stdout) {
        context.addArtifact({ kind: 'stdout', content: outcome.output.stdout, truncated: result.stdoutTruncated });
      }
      if (outcome.output.stderr) {
        context.addArtifact({ kind: 'stderr', content: outcome.output.stderr, truncated: result.stderrTruncated });
      }
      const changes = guarded.changedSince(before);
      if (changes) throw protectedChanged(argv, changes, outcome.output);
      if (outcome.error) throw outcome.error;
      return outcome.output;
    },
  });
}
