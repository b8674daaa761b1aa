import type { Engine, StepResult } from '@stepwise/core';
import { extractFailingTests, type FailingTest } from '@stepwise/tools-node';

/** One run of the validation command after an implementation attempt. */
export interface ValidationResult {
  readonly command: readonly string[];
  /** Null when the command did not run to an exit (not found, timed out, killed). */
  readonly exitCode: number | null;
  readonly passed: boolean;
  /** Failing tests found in the output (node:test, vitest, jest, pytest); `[]` when none could be named. */
  readonly failingTests: readonly FailingTest[];
  /** stdout then stderr, as captured (the tool caps it). */
  readonly output: string;
  /** Why it failed, when it did: the tool's error message. */
  readonly error?: string;
  /** The run that journaled the command, its result and output. */
  readonly runId: string;
}

interface CommandOutcome {
  readonly exitCode?: number | null;
  readonly stdout?: string;
  readonly stderr?: string;
}

function outcomeOf(step: StepResult | undefined): CommandOutcome {
  if (!step) return {};
  if (step.status === 'succeeded') return (step.output ?? {}) as CommandOutcome;
  return (step.error?.details ?? {}) as CommandOutcome;
}

/**
 * Runs the validation command as a one-step plan (`run_command`) on `engine`, so the command, its
 * exit code and its output are journaled like any tool call, and reads the failing tests from it.
 */
export async function runValidation(
  engine: Engine,
  command: readonly string[],
  options: {
    readonly planId: string;
    readonly timeoutMs: number;
    readonly signal?: AbortSignal;
    /** The code agent's run this validation belongs to. */
    readonly parentRunId?: string;
  },
): Promise<ValidationResult> {
  const handle = engine.run(
    {
      id: options.planId,
      goal: `validate: ${command.join(' ')}`,
      steps: [{ id: 'validate', tool: 'run_command', args: { command: [...command], timeoutMs: options.timeoutMs } }],
    },
    {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.parentRunId ? { parentRunId: options.parentRunId } : {}),
    },
  );
  const result = await handle.result;
  const step = result.steps[0];
  const outcome = outcomeOf(step);
  const output = [outcome.stdout ?? '', outcome.stderr ?? ''].filter((part) => part !== '').join('\n');
  const passed = step?.status === 'succeeded';
  return {
    command: [...command],
    exitCode: typeof outcome.exitCode === 'number' ? outcome.exitCode : null,
    passed,
    failingTests: passed ? [] : extractFailingTests(output),
    output,
    ...(passed ? {} : { error: step?.error?.message ?? `the validation run ended ${result.status}` }),
    runId: result.runId,
  };
}
