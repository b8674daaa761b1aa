import { type ErrorCode, ErrorCodes, type StepResult, StepwiseError } from '@stepwise/core';
import { describe, expect, it } from 'vitest';
import { ExitCodes, exitCodeForError, exitCodeForResult } from './exit-codes.js';

function step(
  stepId: string,
  status: StepResult['status'],
  code?: ErrorCode,
  startedAt = '2026-01-01T00:00:00.000Z',
): StepResult {
  return {
    stepId,
    tool: 't',
    status,
    executionId: `ex_${stepId}`,
    attempt: 1,
    startedAt,
    durationMs: 1,
    ...(code ? { error: { code, message: code, retryable: false } } : {}),
  };
}

describe('exit codes', () => {
  it('maps the first failing step to its code', () => {
    expect(exitCodeForResult({ status: 'completed', steps: [step('a', 'succeeded')] })).toBe(0);
    expect(exitCodeForResult({ status: 'failed', steps: [step('a', 'failed', ErrorCodes.TOOL_NOT_FOUND)] })).toBe(30);
    expect(exitCodeForResult({ status: 'failed', steps: [step('a', 'failed', ErrorCodes.TURN_LIMIT)] })).toBe(31);
    expect(exitCodeForResult({ status: 'failed', steps: [step('a', 'failed', ErrorCodes.SANDBOX_VIOLATION)] })).toBe(
      32,
    );
    expect(exitCodeForResult({ status: 'partial', steps: [step('a', 'denied', ErrorCodes.APPROVAL_DENIED)] })).toBe(33);
    expect(exitCodeForResult({ status: 'partial', steps: [step('a', 'skipped', ErrorCodes.APPROVAL_DENIED)] })).toBe(
      33,
    );
    expect(exitCodeForResult({ status: 'failed', steps: [step('a', 'failed', ErrorCodes.STEP_TIMEOUT)] })).toBe(34);
    // The earliest failure wins; cancelled steps and skipped dependents never decide.
    expect(
      exitCodeForResult({
        status: 'failed',
        steps: [
          step('late', 'failed', ErrorCodes.STEP_TIMEOUT, '2026-01-01T00:00:02.000Z'),
          step('early', 'failed', ErrorCodes.SANDBOX_VIOLATION, '2026-01-01T00:00:01.000Z'),
          step('c', 'cancelled', ErrorCodes.STEP_CANCELLED, '2026-01-01T00:00:00.000Z'),
          step('d', 'skipped', ErrorCodes.DEPENDENCY_FAILED, '2026-01-01T00:00:00.000Z'),
        ],
      }),
    ).toBe(32);
    expect(exitCodeForResult({ status: 'cancelled', steps: [step('c', 'cancelled', ErrorCodes.STEP_CANCELLED)] })).toBe(
      1,
    );
  });

  it('maps thrown errors: input problems to 2, the rest to 1', () => {
    for (const code of [
      ErrorCodes.PLAN_INVALID,
      ErrorCodes.NOT_AUTHORIZED,
      ErrorCodes.PLAN_MISMATCH,
      ErrorCodes.CONFIG_INVALID,
    ]) {
      expect(exitCodeForError(new StepwiseError(code, 'x'))).toBe(ExitCodes.INVALID_INPUT);
    }
    expect(exitCodeForError(new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'x'))).toBe(1);
    expect(exitCodeForError(new Error('boom'))).toBe(1);
  });
});
