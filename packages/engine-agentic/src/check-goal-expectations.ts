import { ErrorCodes, exitCodeOf } from '@stepwise/core';
import type { CompleteStepArguments } from './built-in-tools.js';
import { checkExpectations, type ExpectationOutcome, expectationProblems, spawnCommand } from './expectations.js';
import { type GoalStepSession, StepEnd } from './goal-step-session.js';
import { invokeGoalTool } from './invoke-goal-tool.js';
import { describeExpectation } from './step-prompt.js';

/** Ends the step before the model is asked when its `expect` list cannot be checked. */
export function rejectInvalidExpectations(session: GoalStepSession): void {
  const { step, settings, stepIndex } = session.context;
  const problems = expectationProblems(step.expect ?? [], settings.expectations, `/steps/${stepIndex}/expect`);
  if (problems.length === 0) return;
  throw new StepEnd({
    status: 'failed',
    error: {
      code: ErrorCodes.PLAN_INVALID,
      message: `invalid expect criteria: ${problems.map((problem) => `${problem.path}: ${problem.message}`).join('; ')}`,
      retryable: false,
      location: problems[0]?.path as string,
      details: { problems },
    },
  });
}

/** `command_succeeds`: through the registry's command tool when there is one (journaled, sandboxed), else spawned. */
async function runCommand(session: GoalStepSession, argv: readonly string[], id: string): Promise<ExpectationOutcome> {
  const { kernel, settings } = session.context;
  if (kernel.registry.has(settings.commandTool.tool)) {
    const outcome = await invokeGoalTool(session, settings.commandTool.tool, settings.commandTool.args(argv), id);
    if (outcome.status === 'cancelled') throw session.signal.reason;
    const exitCode = exitCodeOf(outcome.output, outcome.error);
    if (outcome.status === 'succeeded' && (exitCode === undefined || exitCode === 0)) return true;
    return {
      ok: false,
      message: `\`${argv.join(' ')}\` did not succeed: ${outcome.error?.message ?? `exit code ${exitCode}`}`,
    };
  }
  return spawnCommand(argv, {
    cwd: kernel.workspace ?? process.cwd(),
    timeoutMs: settings.commandTimeoutMs,
    signal: session.signal,
  });
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
