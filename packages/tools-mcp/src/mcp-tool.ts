import {
  type AnyTool,
  defineTool,
  type Effect,
  ErrorCodes,
  type JsonSchema,
  StepwiseError,
  type ToolContext,
  ToolError,
} from '@stepwise/core';
import { compileSchema, messageOf } from '@stepwise/core/engine';
import { callError } from './call-error.js';
import { type LiveClient, McpConnection } from './mcp-connection.js';
import type { McpToolDescriptor } from './mcp-options.js';
import { errorText, type McpToolOutput, toolOutput } from './tool-output.js';

/**
 * The effect of a server tool: the host's override, else `readOnlyHint` → read,
 * `destructiveHint: true` → destructive, else write. (The MCP spec presumes a tool that is
 * not read-only destructive unless it says otherwise; Stepwise asks for the explicit hint,
 * so an unannotated server's tools are `write` and run without a prompt under the default policy.)
 */
export function effectOf(descriptor: McpToolDescriptor, override?: Effect): Effect {
  if (override) return override;
  if (descriptor.annotations?.readOnlyHint === true) return 'read';
  if (descriptor.annotations?.destructiveHint === true) return 'destructive';
  return 'write';
}

const INVALID_NAME_CHARACTERS = /[^A-Za-z0-9_.-]/g;

/** A Stepwise tool name for a server tool name (MCP allows a wider alphabet than Stepwise). */
export function stepwiseToolName(name: string): string {
  let safe = name.replace(INVALID_NAME_CHARACTERS, '_');
  if (!/^[A-Za-z_]/.test(safe)) safe = `_${safe}`;
  return safe.slice(0, 128);
}

/**
 * The server's input schema as the kernel validates it. `$schema` and `$id` are dropped: ajv
 * (draft-07) refuses meta-schemas it does not know, and two servers may reuse one `$id`.
 * A schema ajv cannot compile falls back to "any object": the server validates it anyway.
 */
export function inputSchemaOf(descriptor: McpToolDescriptor, warn: (message: string) => void): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = descriptor.inputSchema as Record<string, unknown>;
  const schema: JsonSchema = { type: 'object', ...rest };
  try {
    compileSchema(schema);
    return schema;
  } catch (error) {
    warn(
      `MCP tool ${descriptor.name}: its input schema does not compile (${error instanceof Error ? error.message : error}); arguments are checked by the server only`,
    );
    return { type: 'object' };
  }
}

/** A live client for a call; a server that cannot be (re)started fails the call non-retryable. */
async function connect(connection: McpConnection, runId: string, server: () => string) {
  try {
    return await connection.client(runId);
  } catch (error) {
    if (StepwiseError.isInstance(error)) throw error;
    const stderr = connection.stderrTail.trim();
    throw new ToolError({
      code: ErrorCodes.TOOL_FAILED,
      message: `MCP server "${server()}" could not be started: ${messageOf(error)}${stderr ? `; stderr: ${stderr.slice(-1000)}` : ''}`,
      retryable: false,
      location: connection.label,
      cause: error,
    });
  }
}

export interface McpToolSettings {
  readonly name: string;
  readonly server: () => string;
  readonly effect?: Effect;
  readonly timeoutMs: number;
  readonly warn: (message: string) => void;
}

/** The settings a call uses: with whether the tool is idempotent, as `mcpTool` declares it. */
type CallSettings = McpToolSettings & { readonly idempotent: boolean };

type CallResult = Awaited<ReturnType<LiveClient['client']['callTool']>>;

/** Sends `tools/call`; a failure becomes the ToolError that says what happened and whether to retry. */
async function callServer(
  descriptor: McpToolDescriptor,
  connection: McpConnection,
  settings: CallSettings,
  input: unknown,
  context: ToolContext,
): Promise<CallResult> {
  const { client, generation } = await connect(connection, context.runId, settings.server);
  try {
    return await client.callTool(
      { name: descriptor.name, arguments: input as Record<string, unknown> },
      undefined,
      McpConnection.callOptions(context.signal, (progress, total) => {
        if (total !== undefined && total > 0) context.progress((progress / total) * 100);
      }),
    );
  } catch (error) {
    // Timeout and cancel: the kernel already knows why it aborted, and the SDK has told the server.
    if (context.signal.aborted) throw error;
    if (connection.closed) {
      throw new ToolError({
        code: ErrorCodes.TOOL_FAILED,
        message: `MCP server "${settings.server()}" was disposed during the call to ${descriptor.name}`,
        retryable: false,
        location: descriptor.name,
      });
    }
    const mapped = callError(error, {
      tool: descriptor.name,
      server: settings.server(),
      connectionLost: connection.isStale(generation),
      idempotent: settings.idempotent,
      stderr: connection.stderrTail,
      scrub: (value) => connection.scrub(value),
    });
    // A failed request leaves the transport in an unknown state (an HTTP session the server
    // forgot, a half-written pipe): start over on the next call. Protocol errors keep it.
    if (mapped.details?.transport === 'failed') await connection.abandon(generation);
    throw mapped;
  }
}

/** Wraps one server tool as a Stepwise tool whose `execute` sends `tools/call`. */
export function mcpTool(descriptor: McpToolDescriptor, connection: McpConnection, settings: McpToolSettings): AnyTool {
  const effect = effectOf(descriptor, settings.effect);
  const idempotent = descriptor.annotations?.idempotentHint ?? effect === 'read';
  const called = { ...settings, idempotent };
  return defineTool({
    name: settings.name,
    description:
      descriptor.description ?? descriptor.title ?? descriptor.annotations?.title ?? `MCP tool ${descriptor.name}`,
    input: inputSchemaOf(descriptor, settings.warn),
    effect,
    idempotent,
    timeoutMs: settings.timeoutMs,
    async execute(input, context): Promise<McpToolOutput> {
      // The server may echo a secret it was given: scrubbed before the kernel or the model sees it.
      const result = connection.scrub(await callServer(descriptor, connection, called, input, context));
      // Where the server ran (sandboxed or not) goes into every output, so the journal records it.
      const sandbox = connection.sandbox ? { sandbox: connection.sandbox } : {};
      if ('toolResult' in result) {
        // Servers on the 2024-10-07 protocol answer with a bare `toolResult`.
        return { text: '', structured: { toolResult: result.toolResult }, content: [], ...sandbox };
      }
      if (result.isError) {
        const text = errorText(result);
        throw new ToolError({
          code: ErrorCodes.TOOL_FAILED,
          message: `${descriptor.name}: ${text || 'the server reported an error without a message'}`,
          retryable: false,
          location: descriptor.name,
          details: { server: settings.server(), tool: descriptor.name, ...sandbox },
        });
      }
      return { ...toolOutput(settings.name, result, context.addArtifact), ...sandbox };
    },
  });
}
