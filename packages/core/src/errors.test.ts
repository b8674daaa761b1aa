import { describe, expect, it } from 'vitest';
import { ErrorCodes, messageOf, StepwiseError, ToolError, toStepError } from './errors.js';

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

describe('messageOf', () => {
  it("is an error's message, or the text of any other thrown value", () => {
    expect(messageOf(new TypeError('bad'))).toBe('bad');
    expect(messageOf('plain')).toBe('plain');
    expect(messageOf(42)).toBe('42');
    expect(messageOf(Symbol('s'))).toBe('Symbol(s)');
    expect(messageOf(undefined)).toBe('undefined');
  });

  it('never throws, whatever was thrown', () => {
    const throwing = () => {
      throw new Error('no text for you');
    };
    const hostile: unknown[] = [
      Object.create(null),
      { toString: throwing },
      { [Symbol.toPrimitive]: throwing },
      Object.defineProperty(new Error('x'), 'message', { get: throwing }),
      new Proxy({}, { get: throwing, getPrototypeOf: throwing }),
    ];
    for (const value of hostile) {
      expect(messageOf(value)).toMatch(/^\(a thrown (object|function) that cannot be shown as text\)$/);
    }
  });

  it('makes a StepError of a thrown value with no text (E300, not retryable)', () => {
    expect(toStepError(Object.create(null))).toEqual({
      code: ErrorCodes.TOOL_FAILED,
      message: '(a thrown object that cannot be shown as text)',
      retryable: false,
    });
  });
});
