import { spawn } from 'node:child_process';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Expectation } from '@stepwise/core';

/** What a checker gets besides its criterion. */
export interface ExpectationContext {
  readonly workspace: string | undefined;
  readonly signal: AbortSignal;
  /** The `complete_step` call being checked: summary and optional result. */
  readonly completion: { readonly summary: string; readonly result?: unknown };
  /** Full text of every successful tool result of this step, oldest first. */
  readonly toolOutputs: readonly string[];
  /** Runs argv (no shell) in the workspace: through the registry's command tool when there is one. */
  runCommand(argv: readonly string[]): Promise<ExpectationOutcome>;
}

/** `true` when the criterion holds, otherwise what is missing, in words for the model. */
export type ExpectationOutcome = true | { readonly ok: false; readonly message: string };

export type ExpectationChecker = (
  expectation: Expectation,
  context: ExpectationContext,
) => ExpectationOutcome | Promise<ExpectationOutcome>;

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
      outcome = { ok: false, message: `checking ${expectation.kind} failed: ${(error as Error).message}` };
    }
    outcomes.push(outcome);
  }
  return outcomes;
}

/**
 * Runs argv without a shell in `cwd`; succeeds on exit code 0. Used for `command_succeeds` when the
 * registry has no command tool. Output is kept only for the failure message (the last 1 000 characters).
 */
export function spawnCommand(
  argv: readonly string[],
  options: { readonly cwd: string; readonly timeoutMs: number; readonly signal: AbortSignal },
): Promise<ExpectationOutcome> {
  const [command, ...args] = argv;
  return new Promise((resolve) => {
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-1000);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command as string, args, {
        cwd: options.cwd,
        shell: false,
        stdio: ['ignore', 'pipe', 'pipe'],
        signal: options.signal,
        timeout: options.timeoutMs,
        killSignal: 'SIGKILL',
      });
    } catch (error) {
      resolve({ ok: false, message: `\`${argv.join(' ')}\` could not start: ${(error as Error).message}` });
      return;
    }
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('error', (error) =>
      resolve({ ok: false, message: `\`${argv.join(' ')}\` could not run: ${error.message}` }),
    );
    child.on('close', (code, signal) => {
      if (code === 0) resolve(true);
      else
        resolve({
          ok: false,
          message: `\`${argv.join(' ')}\` ${code === null ? `was killed (${signal})` : `exited with code ${code}`}${output ? `; output ends with:\n${output.trim()}` : ''}`,
        });
    });
  });
}
