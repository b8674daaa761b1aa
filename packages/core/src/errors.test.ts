import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError, ToolError, toStepError } from './errors.js';

describe('toStepError and StepwiseError.toJSON', () => {
  it('carry code, message, retryable, location and details, and nothing undefined', () => {
    const error = new ToolError({
      code: 'E777',
      message: 'disk full',
      retryable: true,
      location: '/steps/2',
      details: { free: 0 },
    });
    const expected = {
      code: 'E777',
      message: 'disk full',
      retryable: true,
      location: '/steps/2',
      details: { free: 0 },
    };
    expect(toStepError(error)).toEqual(expected);
    expect(JSON.parse(JSON.stringify(error))).toEqual(expected);
    const bare = toStepError(new StepwiseError(ErrorCodes.INPUT_INVALID, 'bad'));
    expect(bare).toEqual({ code: ErrorCodes.INPUT_INVALID, message: 'bad', retryable: false });
    expect(Object.keys(bare)).toEqual(['code', 'message', 'retryable']);
  });

  it('give anything else thrown the fallback code, not retryable', () => {
    expect(toStepError(new Error('boom'))).toEqual({ code: ErrorCodes.TOOL_FAILED, message: 'boom', retryable: false });
    expect(toStepError('text', ErrorCodes.INPUT_INVALID)).toEqual({
      code: ErrorCodes.INPUT_INVALID,
      message: 'text',
      retryable: false,
    });
  });
});
