import { ErrorCodes, StepwiseError } from '@stepwise/core';
import { callTool, deriveExecutionId, type KernelContext } from '@stepwise/core/engine';
import { extractFailingTests, type FailingTest } from '@stepwise/tools-node';

/** One command of the validation: an argv (no shell), named, mandatory unless `optional`. */
export interface ValidationCommand {
  /** Its name in reports, e.g. `test`, `lint`, `typecheck`. */
  readonly name: string;
  readonly command: readonly string[];
  /** A failure is reported but does not fail the attempt. Default false. */
  readonly optional?: boolean;
  /** Default: the solve's `validateTimeoutMs`. */
  readonly timeoutMs?: number;
}

/** One validation command's run after an implementation attempt. */
export interface ValidationResult {
  readonly name: string;
  readonly command: readonly string[];
  readonly optional: boolean;
  /** Null when the command did not run to an exit (not found, timed out, killed). */
  readonly exitCode: number | null;
  readonly passed: boolean;
  /** Failing tests found in the output (node:test, vitest, jest, pytest); `[]` when none could be named. */
  readonly failingTests: readonly FailingTest[];
  /** stdout then stderr, as captured (the tool caps it). */
  readonly output: string;
  /** Why it failed, when it did: the tool's error message. */
  readonly error?: string;
  /** The run that journaled the command as a tool call (the code agent's run itself). */
  readonly runId: string;
}

const invalid = (location: string, message: string) =>
  new StepwiseError(ErrorCodes.CONFIG_INVALID, message, { location });

/**
 * Checks and normalizes the validation: an argv (`['npm', 'test']`, named `test`), or named commands
 * (`{ test: ['node', '--test'], lint: { command: ['npx', 'biome', 'check'], optional: true } }`).
 * Throws E601 at the offending name.
 */
export function validationCommands(value: unknown, location = 'validate'): ValidationCommand[] {
  const argv = (candidate: unknown, where: string): string[] => {
    if (
      !Array.isArray(candidate) ||
      candidate.length === 0 ||
      !candidate.every((part) => typeof part === 'string' && part !== '')
    ) {
      throw invalid(where, `${where} must be an argv array of non-empty strings, e.g. ["npm", "test"]`);
    }
    return [...candidate];
  };
  if (Array.isArray(value)) return [{ name: 'test', command: argv(value, location) }];
  if (typeof value !== 'object' || value === null) {
    throw invalid(location, `${location} must be an argv array or named commands, e.g. { "test": ["npm", "test"] }`);
  }
  const commands = Object.entries(value).map(([name, entry]): ValidationCommand => {
    const where = `${location}/${name}`;
    if (Array.isArray(entry)) return { name, command: argv(entry, where) };
    if (typeof entry !== 'object' || entry === null)
      throw invalid(where, `${where} must be an argv or { command, optional }`);
    const { command, optional, timeoutMs } = entry as Record<string, unknown>;
    if (optional !== undefined && typeof optional !== 'boolean')
      throw invalid(`${where}/optional`, 'optional must be true or false');
    if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0)) {
      throw invalid(`${where}/timeoutMs`, 'timeoutMs must be a positive number');
    }
    return {
      name,
      command: argv(command, `${where}/command`),
      ...(optional === true ? { optional } : {}),
      ...(typeof timeoutMs === 'number' ? { timeoutMs } : {}),
    };
  });
  if (commands.length === 0) throw invalid(location, `${location} names no command`);
  if (commands.every((command) => command.optional))
    throw invalid(location, `${location}: at least one command must be mandatory`);
  return commands;
}

interface CommandOutcome {
  readonly exitCode?: number | null;
  readonly stdout?: string;
  readonly stderr?: string;
}

/** Where a validation runs: inside an attempt of a step of the code agent's run, through the kernel. */
export interface ValidationScope {
  readonly kernel: KernelContext;
  readonly stepId: string;
  readonly attempt: number;
  /** Tells apart the calls of an attempt validated again after a crash (the session's number). */
  readonly session: number;
  readonly timeoutMs: number;
}

/**
 * Runs one validation command as a `run_command` call of the attempt, through the kernel (approval,
 * sandbox, command policy, journal), and reads the failing tests from its output.
 */
export async function runValidation(scope: ValidationScope, command: ValidationCommand): Promise<ValidationResult> {
  const { kernel, stepId, attempt } = scope;
  const outcome = await callTool(
    {
      stepId,
      tool: 'run_command',
      args: { command: [...command.command], timeoutMs: command.timeoutMs ?? scope.timeoutMs },
      attempt,
      executionId: deriveExecutionId(kernel.runId, stepId, attempt, `validate.${command.name}.s${scope.session}`),
      description: `validation: ${command.name}`,
    },
    kernel,
  );
  await kernel.journal.flush();
  const result = (outcome.status === 'succeeded' ? outcome.output : outcome.error?.details) as
    | CommandOutcome
    | undefined;
  const output = [result?.stdout ?? '', result?.stderr ?? ''].filter((part) => part !== '').join('\n');
  const passed = outcome.status === 'succeeded';
  return {
    name: command.name,
    command: [...command.command],
    optional: command.optional === true,
    exitCode: typeof result?.exitCode === 'number' ? result.exitCode : null,
    passed,
    failingTests: passed ? [] : extractFailingTests(output),
    output,
    ...(passed ? {} : { error: outcome.error?.message ?? `the command ended ${outcome.status}` }),
    runId: kernel.runId,
  };
}
