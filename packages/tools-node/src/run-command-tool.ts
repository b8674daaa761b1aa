import { constants } from 'node:fs';
import { access, lstat, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { defineTool, ErrorCodes, REDACTED, SandboxViolation, StepwiseError, ToolError } from '@stepwise/core';
import { z } from 'zod';
import { childEnvironment } from './child-environment.js';
import { type CommandPolicy, checkCommand, executableName, pathArguments } from './command-policy.js';
import { runProcess } from './run-process.js';
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
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, constants.X_OK);
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

function scrub(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) if (result.includes(secret)) result = result.split(secret).join(REDACTED);
  return result;
}

/**
 * `run_command`: runs an allowlisted program with argv (no shell) inside the workspace.
 * Refuses dangerous arguments per executable, builds the environment from an allowlist,
 * kills the whole process tree on timeout, caps output, and fails (E304) on a non-zero exit.
 */
export function runCommandTool(sandbox: WorkspaceSandbox, options: CommandOptions) {
  const policy: CommandPolicy = options;
  const defaultTimeout = options.timeoutMs ?? 120_000;
  const maxTimeout = options.maxTimeoutMs ?? 30 * 60_000;
  return defineTool({
    name: 'run_command',
    description: `Run a program in the workspace with argv (no shell), e.g. ["git", "status"]. Allowed executables: ${options.allow.join(', ') || 'none'}. Fails when the exit code is not 0; stdout and stderr are returned either way.`,
    input: runCommandInput,
    effect: 'exec',
    idempotent: false,
    async execute(input, context): Promise<RunCommandOutput> {
      const argv = input.command;
      const refusal = checkCommand(argv, policy, { stdin: input.stdin !== undefined });
      if (refusal) {
        if (refusal.code === ErrorCodes.SANDBOX_VIOLATION) {
          throw new SandboxViolation(refusal.message, {
            location: `command/${refusal.index}`,
            details: { argument: argv[refusal.index] },
          });
        }
        throw new ToolError({ code: refusal.code, message: refusal.message, location: `command/${refusal.index}` });
      }
      const cwd = await sandbox.resolve(input.cwd ?? '.');
      const cwdStats = await stat(cwd.absolute).catch(() => undefined);
      if (!cwdStats?.isDirectory()) {
        throw new ToolError({
          code: ErrorCodes.TOOL_NOT_FOUND,
          message: `the working directory ${input.cwd} is not a directory`,
          location: 'cwd',
        });
      }
      for (const { index, value, always } of pathArguments(argv)) {
        // Absolute, `~`, drive and UNC forms go to the sandbox as written, so it refuses them by their form.
        const target = /^([A-Za-z]:|[\\/~])/.test(value) ? value : path.join(cwd.absolute, value);
        if (!always && !(await exists(target))) continue;
        try {
          await sandbox.resolve(target);
        } catch (error) {
          if (StepwiseError.isInstance(error) && error.code === ErrorCodes.SANDBOX_VIOLATION) {
            throw new SandboxViolation(
              `argument ${index} (${JSON.stringify(value)}) refers to a path outside the workspace`,
              { location: `command/${index}`, details: { argument: argv[index] } },
            );
          }
          throw error;
        }
      }
      const name = executableName(argv[0] as string);
      const { env, secrets } = childEnvironment({
        ...(options.env?.allow ? { allow: options.env.allow } : {}),
        ...(input.env ? { requested: input.env } : {}),
        executable: name,
      });
      const file = await resolveExecutable(argv[0] as string, env.PATH ?? env.Path ?? '', sandbox);
      const timeoutMs = Math.min(input.timeoutMs ?? defaultTimeout, maxTimeout);
      let result: Awaited<ReturnType<typeof runProcess>>;
      try {
        result = await runProcess({
          file,
          args: argv.slice(1),
          argv0: argv[0] as string,
          cwd: cwd.absolute,
          env,
          ...(input.stdin === undefined ? {} : { stdin: input.stdin }),
          timeoutMs,
          maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
          killGraceMs: options.killGraceMs ?? 2000,
          signal: context.signal,
        });
      } catch (error) {
        throw new ToolError({
          code: ErrorCodes.TOOL_EXECUTABLE,
          message: `${argv[0]} could not be started: ${error instanceof Error ? error.message : error}`,
          location: 'command/0',
        });
      }
      const stdout = scrub(result.stdout, secrets);
      const stderr = scrub(result.stderr, secrets);
      if (stdout) context.addArtifact({ kind: 'stdout', content: stdout, truncated: result.stdoutTruncated });
      if (stderr) context.addArtifact({ kind: 'stderr', content: stderr, truncated: result.stderrTruncated });
      const output: RunCommandOutput = {
        command: [...argv],
        cwd: cwd.relative === '' ? '.' : cwd.relative,
        exitCode: result.exitCode,
        signal: result.signal,
        stdout,
        stderr,
        stdoutTruncated: result.stdoutTruncated,
        stderrTruncated: result.stderrTruncated,
        durationMs: Math.round(result.durationMs),
      };
      const details = { exitCode: result.exitCode, signal: result.signal, stdout, stderr };
      if (result.aborted) {
        throw new ToolError({
          code: ErrorCodes.STEP_CANCELLED,
          message: `${argv[0]} was stopped: the step was cancelled`,
          location: 'command',
          details,
        });
      }
      if (result.timedOut) {
        throw new ToolError({
          code: ErrorCodes.STEP_TIMEOUT,
          message: `${argv[0]} timed out after ${timeoutMs} ms; it and every process it started were killed`,
          location: 'command',
          details: { ...details, timedOut: true },
        });
      }
      if (result.exitCode !== 0) {
        const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
        const lastLine = stderr.trim().split('\n').pop() ?? '';
        throw new ToolError({
          code: ErrorCodes.TOOL_COMMAND_FAILED,
          message: `${argv.join(' ')} ${how}${lastLine ? `: ${lastLine.slice(0, 500)}` : ''}`,
          location: 'command',
          details,
        });
      }
      return output;
    },
  });
}
