import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCodes, StepwiseError, ToolError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';

export interface CallErrorContext {
  /** The server's tool name. */
  readonly tool: string;
  /** Plugin name, for messages. */
  readonly server: string;
  /**
   * True when the connection this call used has died or was replaced meanwhile: the one sign of a
   * lost connection. The SDK's `ConnectionClosed` code (-32000) is also a code a server may send for
   * its own errors, in the range JSON-RPC leaves to servers.
   */
  readonly connectionLost: boolean;
  /** Whether the tool may run again after a call whose outcome is unknown (a server-side timeout). */
  readonly idempotent: boolean;
  /** The server's recent stderr, if any. */
  readonly stderr: string;
  /** Removes secrets from what the server or transport wrote (messages, error data). Default: none. */
  readonly scrub?: <T>(value: T) => T;
}

function stderrNote(stderr: string): string {
  const tail = stderr.trim();
  return tail ? `; stderr: ${tail.slice(-1000)}` : '';
}

/** A response that does not match the protocol's schema (zod's error, whichever zod the SDK uses). */
function isMalformedResponse(error: unknown): boolean {
  return error instanceof Error && (error.name === 'ZodError' || error.name === '$ZodError');
}

/**
 * Maps what `callTool` threw to a ToolError: transport failures (the server died, the
 * connection dropped, the HTTP request failed) are retryable, because the next attempt gets a
 * fresh connection; protocol errors (the server answered with a JSON-RPC error, or something
 * malformed) are not, except a server-side timeout of an idempotent tool.
 */
export function callError(error: unknown, context: CallErrorContext): StepwiseError {
  const where = `MCP server "${context.server}", tool ${context.tool}`;
  if (StepwiseError.isInstance(error)) return error;
  const scrub = context.scrub ?? (<T>(value: T) => value);
  const message = scrub(messageOf(error));
  if (context.connectionLost) {
    return new ToolError({
      code: ErrorCodes.TOOL_FAILED,
      message: `${where}: the connection was lost during the call (the server exited or the transport closed); it is restarted on the next call${stderrNote(context.stderr)}`,
      retryable: true,
      location: context.tool,
      details: { transport: 'closed' },
      cause: error,
    });
  }
  if (error instanceof McpError) {
    const details = { mcpCode: error.code, ...(error.data === undefined ? {} : { data: scrub(error.data) }) };
    if (error.code === ErrorCode.RequestTimeout) {
      // The server's own timeout (the SDK's is off): the call may have had its effect, as after the kernel's.
      return new ToolError({
        code: ErrorCodes.STEP_TIMEOUT,
        message: `${where}: ${message}`,
        retryable: context.idempotent,
        location: context.tool,
        details,
        cause: error,
      });
    }
    return new ToolError({
      code: error.code === ErrorCode.InvalidParams ? ErrorCodes.ARGUMENTS_INVALID : ErrorCodes.TOOL_FAILED,
      message: `${where}: ${message}`,
      retryable: false,
      location: context.tool,
      details,
      cause: error,
    });
  }
  if (isMalformedResponse(error)) {
    return new ToolError({
      code: ErrorCodes.TOOL_FAILED,
      message: `${where}: the server sent a malformed result: ${message}`,
      retryable: false,
      location: context.tool,
      cause: error,
    });
  }
  if (error instanceof StreamableHTTPError && error.code !== undefined && isPermanentStatus(error.code)) {
    return new ToolError({
      code: error.code === 401 || error.code === 403 ? ErrorCodes.TOOL_PERMISSION : ErrorCodes.TOOL_FAILED,
      message: `${where}: HTTP ${error.code}: ${message}`,
      retryable: false,
      location: context.tool,
      details: { status: error.code },
      cause: error,
    });
  }
  // Anything else came from the transport: fetch failed, EPIPE, "Not connected", an HTTP status.
  return new ToolError({
    code: ErrorCodes.TOOL_FAILED,
    message: `${where}: transport failure${error instanceof StreamableHTTPError && error.code !== undefined ? ` (HTTP ${error.code})` : ''}: ${message}${stderrNote(context.stderr)}`,
    retryable: true,
    location: context.tool,
    details: { transport: 'failed' },
    cause: error,
  });
}

/** 4xx answers that another attempt will not change (404 is an expired session: a new one may work). */
function isPermanentStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 404 && status !== 408 && status !== 429;
}
