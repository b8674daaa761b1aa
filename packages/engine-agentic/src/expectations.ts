import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, type Expectation, StepwiseError } from '@stepwise/core';

/** What a checker gets besides its criterion. */
export interface ExpectationContext {
  readonly workspace: string | undefined;
  readonly signal: AbortSignal;
  /** The `complete_step` call being checked: summary and optional result. */
  readonly completion: { readonly summary: string; readonly result?: unknown };
  /** Full text of every successful tool result of this step, oldest first. */
  readonly toolOutputs: readonly string[];
  /**
   * Runs argv through the registry's command tool (`run_command`) with the core kernel: approval,
   * OS sandbox, policy and journal apply as to any call. Throws `CommandToolUnavailable` (E201)
   * when no command tool is registered: a command never runs outside the kernel.
   */
  runCommand(argv: readonly string[]): Promise<ExpectationOutcome>;
}

/** `true` when the criterion holds, otherwise what is missing, in words for the model. */
export type ExpectationOutcome = true | { readonly ok: false; readonly message: string };

export type ExpectationChecker = (
  expectation: Expectation,
  context: ExpectationContext,
) => ExpectationOutcome | Promise<ExpectationOutcome>;

/**
 * A command check (`command_succeeds`, or a custom checker's `runCommand`) with no command tool
 * registered: the step fails with it (E201) — the command is not run at all, since a command runs
 * only through the kernel (approval, sandbox, journal).
 */
export class CommandToolUnavailable extends StepwiseError {
  constructor(tool: string, location?: string) {
    super(
      ErrorCodes.TOOL_UNKNOWN,
      `the expected outcome runs a command, and commands run only through the registered command tool "${tool}" (approval, OS sandbox, journal), which is not registered: register it (nodeTools from @stepwise/tools-node) or name another with commandTool`,
      location === undefined ? {} : { location },
    );
    this.name = 'CommandToolUnavailable';
  }
}

/**
 * The first `command_succeeds` criterion that cannot be checked because `commandTool` is not
 * registered (a custom checker for the kind decides for itself), as a step error to fail with.
 */
export function unavailableCommandTool(
  expect: readonly Expectation[],
  custom: Readonly<Record<string, ExpectationChecker>>,
  pathPrefix: string,
  commandTool: { readonly name: string; readonly registered: boolean },
): CommandToolUnavailable | undefined {
  if (commandTool.registered || custom.command_succeeds) return undefined;
  const index = expect.findIndex((expectation) => expectation.kind === 'command_succeeds');
  return index === -1 ? undefined : new CommandToolUnavailable(commandTool.name, `${pathPrefix}/${index}`);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'string');
}

/** Problems with a step's `expect` list, as `[json path, message]`, before anything runs. */
export function expectationProblems(
  expect: readonly Expectation[],
  custom: Readonly<Record<string, ExpectationChecker>>,
  pathPrefix: string,
): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  expect.forEach((expectation, index) => {
    const at = `${pathPrefix}/${index}`;
    if (custom[expectation.kind]) return;
    switch (expectation.kind) {
      case 'file_exists':
        if (typeof expectation.path !== 'string' || expectation.path === '')
          problems.push({ path: `${at}/path`, message: 'file_exists needs a "path"' });
        break;
      case 'command_succeeds':
        if (!isStringArray(expectation.argv))
          problems.push({ path: `${at}/argv`, message: 'command_succeeds needs "argv", a non-empty array of strings' });
        break;
      case 'output_matches':
        if (typeof expectation.pattern !== 'string') {
          problems.push({ path: `${at}/pattern`, message: 'output_matches needs a "pattern" (a regular expression)' });
          break;
        }
        try {
          new RegExp(expectation.pattern, typeof expectation.flags === 'string' ? expectation.flags : undefined);
        } catch (error) {
          problems.push({ path: `${at}/pattern`, message: `invalid regular expression: ${(error as Error).message}` });
        }
        if (expectation.target !== undefined && expectation.target !== 'completion' && expectation.target !== 'tools')
          problems.push({ path: `${at}/target`, message: 'output_matches "target" is "completion" or "tools"' });
        break;
      default:
        problems.push({ path: `${at}/kind`, message: `no checker for expectation kind "${expectation.kind}"` });
    }
  });
  return problems;
}

async function fileExists(expectation: Expectation, context: ExpectationContext): Promise<ExpectationOutcome> {
  const root = path.resolve(context.workspace ?? process.cwd());
  const target = path.resolve(root, String(expectation.path));
  try {
    // Real paths on both sides, so a symlink cannot point the check outside the workspace.
    const [realRoot, realTarget] = await Promise.all([realpath(root), realpath(target)]);
    const relative = path.relative(realRoot, realTarget);
    if (relative.startsWith('..') || path.isAbsolute(relative)) {
      return { ok: false, message: `${String(expectation.path)} is outside the workspace` };
    }
    await stat(realTarget);
    return true;
  } catch {
    return { ok: false, message: `the file ${String(expectation.path)} does not exist` };
  }
}

function outputMatches(expectation: Expectation, context: ExpectationContext): ExpectationOutcome {
  const pattern = new RegExp(
    String(expectation.pattern),
    typeof expectation.flags === 'string' ? expectation.flags : undefined,
  );
  const texts =
    expectation.target === 'tools'
      ? context.toolOutputs
      : [
          context.completion.result === undefined
            ? context.completion.summary
            : `${context.completion.summary}\n${JSON.stringify(context.completion.result)}`,
        ];
  if (texts.some((text) => pattern.test(text))) return true;
  return {
    ok: false,
    message: `no ${expectation.target === 'tools' ? 'tool result' : 'completion summary or result'} matches /${pattern.source}/${pattern.flags}`,
  };
}

const builtIn: Readonly<Record<string, ExpectationChecker>> = {
  file_exists: fileExists,
  command_succeeds: (expectation, context) => context.runCommand(expectation.argv as string[]),
  output_matches: outputMatches,
};

/** Checks every criterion, in order: one outcome per criterion. Custom checkers win over built-ins. */
export async function checkExpectations(
  expect: readonly Expectation[],
  custom: Readonly<Record<string, ExpectationChecker>>,
  context: ExpectationContext,
): Promise<ExpectationOutcome[]> {
  const outcomes: ExpectationOutcome[] = [];
  for (const expectation of expect) {
    const checker = custom[expectation.kind] ?? builtIn[expectation.kind];
    let outcome: ExpectationOutcome;
    try {
      outcome = checker
        ? await checker(expectation, context)
        : { ok: false, message: `no checker for "${expectation.kind}"` };
    } catch (error) {
      // Not something the model can fix: the step ends with it.
      if (error instanceof CommandToolUnavailable || context.signal.aborted) throw error;
      outcome = { ok: false, message: `checking ${expectation.kind} failed: ${(error as Error).message}` };
    }
    outcomes.push(outcome);
  }
  return outcomes;
}
