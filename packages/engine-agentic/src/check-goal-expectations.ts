import { ErrorCodes } from '@stepwise/core';
import { toStepError } from '@stepwise/core/engine';
import { exitCodeOf } from '@stepwise/core/store';
import type { CompleteStepArguments } from './built-in-tools.js';
import {
  CommandToolUnavailable,
  checkExpectations,
  type ExpectationOutcome,
  expectationProblems,
  unavailableCommandTool,
} from './expectations.js';
import type { GoalStepSession, Outcome } from './goal-step-session.js';
import { invokeGoalTool } from './invoke-goal-tool.js';
import { describeExpectation } from './step-prompt.js';

/** The step's end, before the model is asked, when its `expect` list cannot be checked; else undefined. */
export function rejectInvalidExpectations(session: GoalStepSession): Outcome | undefined {
  const { step, settings, stepIndex } = session.context;
  const at = `/steps/${stepIndex}/expect`;
  const problems = expectationProblems(step.expect ?? [], settings.expectations, at);
  if (problems.length === 0) {
    const tool = settings.commandTool.tool;
    const registered = session.context.kernel.registry.has(tool);
    const unavailable = unavailableCommandTool(step.expect ?? [], settings.expectations, at, {
      name: tool,
      registered,
    });
    return unavailable ? { status: 'failed', error: toStepError(unavailable) } : undefined;
  }
  return {
    status: 'failed',
    error: {
      code: ErrorCodes.PLAN_INVALID,
      message: `invalid expect criteria: ${problems.map((problem) => `${problem.path}: ${problem.message}`).join('; ')}`,
      retryable: false,
      location: problems[0]?.path as string,
      details: { problems },
    },
  };
}

/** `command_succeeds` and custom checkers' commands: only through the registered command tool and the kernel. */
async function runCommand(session: GoalStepSession, argv: readonly string[], id: string): Promise<ExpectationOutcome> {
  const { kernel, settings } = session.context;
  if (!kernel.registry.has(settings.commandTool.tool)) throw new CommandToolUnavailable(settings.commandTool.tool);
  const outcome = await invokeGoalTool(session, settings.commandTool.tool, settings.commandTool.args(argv), id);
  if (outcome.status === 'cancelled') throw session.signal.reason;
  const exitCode = exitCodeOf(outcome.output, outcome.error);
  if (outcome.status === 'succeeded' && (exitCode === undefined || exitCode === 0)) return true;
  return {
    ok: false,
    message: `\`${argv.join(' ')}\` did not succeed: ${outcome.error?.message ?? `exit code ${exitCode}`}`,
  };
}

/**
 * Checks the step's expected outcome against a `complete_step` call (`id`: the call's execution
 * id) and keeps each criterion's state for the goal progress. Returns what is missing, in words
 * for the model; empty when the completion is accepted.
 */
export async function checkCompletion(
  session: GoalStepSession,
  completion: CompleteStepArguments,
  id: string,
): Promise<string[]> {
  const { step, kernel, settings } = session.context;
  const expect = step.expect ?? [];
  const outcomes = await checkExpectations(expect, settings.expectations, {
    workspace: kernel.workspace,
    signal: session.signal,
    completion,
    toolOutputs: session.toolOutputs,
    runCommand: (argv) => runCommand(session, argv, `${id}.expect`),
  });
  session.criteria = expect.map((expectation, index) => {
    const outcome = outcomes[index];
    const criterion = describeExpectation(expectation);
    return outcome === true ? { criterion, status: 'met' } : { criterion, status: 'unmet', message: outcome?.message };
  });
  return outcomes.flatMap((outcome) => (outcome === true ? [] : [outcome.message]));
}
