import { ErrorCodes, StepwiseError, ToolError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import { errorCode } from './file-system.js';

/**
 * Turns a file system error into a typed ToolError: missing → E301, refused by the
 * operating system → E302, anything else → E300. Stepwise errors pass through untouched.
 * `location` is the workspace path the caller asked for, never an absolute host path.
 */
export function fileSystemError(error: unknown, location: string, action: string): StepwiseError {
  if (StepwiseError.isInstance(error)) return error;
  const code = errorCode(error);
  const reason = error instanceof Error ? messageOf(error).replace(/^[A-Z]+: /, '') : messageOf(error);
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new ToolError({
      code: ErrorCodes.TOOL_NOT_FOUND,
      message: `cannot ${action} ${location}: no such file or directory`,
      location,
      details: { errno: code },
    });
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new ToolError({
      code: ErrorCodes.TOOL_PERMISSION,
      message: `cannot ${action} ${location}: permission denied (${code})`,
      location,
      details: { errno: code },
    });
  }
  const transient = code === 'EBUSY' || code === 'EAGAIN' || code === 'EMFILE' || code === 'ENFILE';
  return new ToolError({
    code: ErrorCodes.TOOL_FAILED,
    message: `cannot ${action} ${location}: ${reason}`,
    location,
    retryable: transient,
    ...(code === undefined ? {} : { details: { errno: code } }),
  });
}
