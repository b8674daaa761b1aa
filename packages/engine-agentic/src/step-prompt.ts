import type { Expectation, Plan, Step } from '@stepwise/core';
import { truncateText } from './context-window.js';
import type { TokenEstimator } from './token-estimator.js';

/** The default system prompt: the four decisions of the executor loop and how to use tool results. */
export const DEFAULT_SYSTEM_PROMPT = `You carry out one step of a plan, turn by turn. In each turn do exactly one of:
- COMMAND: call one or more of the offered tools to read, search, change or run something;
- ANALYZE: write your analysis of the results so far, without calling a tool;
- COMPLETE: call complete_step with a summary once the step's goal is achieved and its expected outcome holds;
- BLOCKED: call report_blocked with the reason when the step cannot be done.
Tool results come back as tool messages. Errors come back too (invalid arguments, denied actions, failed commands): read them and correct your next call instead of repeating it. Call only the offered tools, with arguments that match their schemas. Never claim a result you have not observed.`;

/** How a criterion reads to the model. */
export function describeExpectation(expectation: Expectation): string {
  if (typeof expectation.description === 'string') return expectation.description;
  switch (expectation.kind) {
    case 'file_exists':
      return `the file ${String(expectation.path)} exists`;
    case 'command_succeeds':
      return `the command \`${Array.isArray(expectation.argv) ? expectation.argv.join(' ') : ''}\` exits with code 0`;
    case 'output_matches':
      return `the ${expectation.target === 'tools' ? 'output of a tool call' : 'completion summary or result'} matches /${String(expectation.pattern)}/${typeof expectation.flags === 'string' ? expectation.flags : ''}`;
    default:
      return `${expectation.kind} ${JSON.stringify(expectation)}`;
  }
}

function renderOutput(output: unknown): string {
  if (typeof output === 'string') return output;
  return JSON.stringify(output) ?? 'null';
}

/** The user message that opens a goal step: plan goal, the step, its criteria, dependency results and tools. */
export function stepMessage(
  plan: Plan,
  step: Step,
  dependencies: readonly { readonly stepId: string; readonly output: unknown }[],
  toolNames: readonly string[],
  options: { readonly estimator: TokenEstimator; readonly maxDependencyTokens: number },
): string {
  const lines: string[] = [];
  if (plan.goal) lines.push(`Plan goal: ${plan.goal}`);
  lines.push(`Current step "${step.id}": ${step.description ?? '(no description; infer the goal from the plan)'}`);
  if (step.expect?.length) {
    lines.push('Expected outcome (checked before complete_step is accepted):');
    for (const expectation of step.expect) lines.push(`- ${describeExpectation(expectation)}`);
  }
  if (dependencies.length > 0) {
    lines.push('Results of the steps this one depends on:');
    for (const dependency of dependencies) {
      const text = truncateText(renderOutput(dependency.output), options.maxDependencyTokens, options.estimator).text;
      lines.push(`- ${dependency.stepId}: ${text}`);
    }
  }
  lines.push(`Tools you may call: ${toolNames.join(', ')}.`);
  return lines.join('\n');
}

export const CONTINUE_NOTE =
  'Continue with the step: call a tool, or call complete_step when it is done, or report_blocked if it cannot be done.';

export const EMPTY_ANSWER_NOTE =
  'Your answer was empty. Call a tool, write your analysis, or call complete_step or report_blocked.';

export function analyseNote(calls: number): string {
  return `You made ${calls} tool calls without stopping to analyse. Before calling any more tools, write your analysis of the results so far: what you learned, what is still missing, and what you will do next. Do not call a tool in your next answer.`;
}

export function personAnswerNote(question: string, answer: string): string {
  return `A person answered your question ("${question}"):\n${answer}\nContinue with the step with this in mind.`;
}

export const LAST_TURN_NOTE =
  'You have one turn left in this step: call complete_step if the step is done, otherwise report_blocked with what is missing.';
