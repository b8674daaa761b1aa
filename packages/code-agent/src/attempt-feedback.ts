import type { WorkspaceChangeList } from './code-agent-events.js';
import type { ValidationResult } from './run-validation.js';

/** A validation as the feedback needs it (a `ValidationResult`, or its journaled `validation-end`). */
export type ValidationSummary = Pick<ValidationResult, 'command' | 'exitCode' | 'passed' | 'output'> & {
  readonly name?: string;
  readonly optional?: boolean;
  readonly error?: string;
  readonly failingTests: readonly { readonly name: string; readonly file?: string; readonly output: string }[];
};

/** What the model learns about a failed attempt before the next one. */
export interface FailedAttempt {
  readonly attempt: number;
  /** The implementation's error, when the step itself failed (blocked, turn limit…). */
  readonly implementationError?: string;
  /** Each validation command's outcome (none when the attempt ended before validation). */
  readonly validations: readonly ValidationSummary[];
  /** What the attempt changed; all of it was rolled back. */
  readonly changes: WorkspaceChangeList;
}

const MAX_OUTPUT_TAIL = 1500;

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/**
 * The text appended to a step's description for its next attempt: the validation command, its exit
 * code, the failing tests with their output (or the output's tail when no test could be named),
 * what the attempt had changed, and that it was rolled back.
 */
export function attemptFeedback(failed: FailedAttempt): string {
  const lines = [`Attempt ${failed.attempt} of this step failed and was rolled back.`];
  if (failed.implementationError) lines.push(`The step itself failed: ${failed.implementationError}`);
  const changed = [...failed.changes.modified, ...failed.changes.created, ...failed.changes.deleted];
  if (changed.length > 0) {
    lines.push(`It had changed: ${changed.join(', ')}. Those files are back as they were before the attempt.`);
  }
  for (const validation of failed.validations) lines.push(...validationLines(validation));
  lines.push('Read the files again before editing, and do not repeat the same change.');
  return lines.join('\n');
}

function validationLines(validation: ValidationSummary): string[] {
  const how =
    validation.exitCode === null
      ? `failed (${validation.error ?? 'no exit code'})`
      : `exited with code ${validation.exitCode}`;
  const what = validation.optional ? 'The optional validation command' : 'The validation command';
  const lines = [`${what} \`${validation.command.join(' ')}\` ${validation.passed ? 'passed' : how}.`];
  if (validation.failingTests.length > 0) {
    lines.push('Failing tests:');
    for (const test of validation.failingTests) {
      lines.push(`- ${test.file ? `${test.file}: ` : ''}${test.name}`, indent(test.output));
    }
  } else if (!validation.passed && validation.output) {
    const tail = validation.output.slice(-MAX_OUTPUT_TAIL);
    lines.push(`Output${tail.length < validation.output.length ? ' (end)' : ''}:`, indent(tail));
  }
  return lines;
}
