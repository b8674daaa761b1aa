import { type AnyTool, definePlugin, ErrorCodes, type Plugin, StepwiseError } from '@stepwise/core';
import { messageOf } from '@stepwise/core/engine';
import { McpConnection, type ServerInfo } from './mcp-connection.js';
import { isStdioOptions, type McpToolDescriptor, type McpToolsOptions, validateMcpOptions } from './mcp-options.js';
import { mcpTool, stepwiseToolName } from './mcp-tool.js';
import { type McpSandboxStatus, sandboxReady } from './server-launch.js';

/** The plugin `mcpTools` returns: a Stepwise plugin plus what a host may want to know about the server. */
export interface McpPlugin extends Plugin {
  /** The server's tools as listed (or as given in `knownTools`); JSON, so a host can cache it. */
  readonly listing: readonly McpToolDescriptor[];
  /** `serverInfo` from the last initialize; undefined until the first connection. */
  readonly server: ServerInfo | undefined;
  /** The server's `instructions`, if it sent any. */
  readonly instructions: string | undefined;
  /** Pid of the running server process (stdio only; undefined while none runs). In the OS sandbox, bubblewrap's. */
  readonly pid: number | undefined;
  /**
   * How the stdio server runs: in the OS sandbox or not, with which network and writable
   * directories. Undefined before its first start and for HTTP servers. Each call's output
   * carries it too (`output.sandbox`), so the journal records it.
   */
  readonly sandbox: McpSandboxStatus | undefined;
  /** Closes the connection and stops the server process. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Connects to an MCP server, lists its tools (following pagination) and returns them as a
 * plugin for `registry.use(plugin, { prefix })`.
 *
 * The connection made for the listing is kept for the calls (one server process per plugin);
 * when it dies it is re-established on the next call. Pass `knownTools` to start nothing until
 * the first call. Invalid options throw E601; a server that cannot be started or listed throws E602.
 */
export async function mcpTools(options: McpToolsOptions): Promise<McpPlugin> {
  validateMcpOptions(options);
  const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'StepwiseMcpWarning'));
  const connection = new McpConnection(options, warn);
  // A server that requires the sandbox is refused now, also when `knownTools` defers its start.
  if (isStdioOptions(options) && options.sandbox === 'required') await sandboxReady(options, connection.label);
  let listing: readonly McpToolDescriptor[];
  if (options.knownTools) {
    listing = options.knownTools;
  } else {
    try {
      listing = await connection.listTools();
    } catch (error) {
      const stderr = connection.stderrTail.trim();
      await connection.close();
      if (StepwiseError.isInstance(error)) throw error;
      throw new StepwiseError(
        ErrorCodes.PLUGIN_INVALID,
        `could not start and list MCP server ${connection.label}: ${messageOf(error)}${stderr ? `; stderr: ${stderr.slice(-1000)}` : ''}`,
        { location: connection.label, cause: error },
      );
    }
  }

  const pluginName = () => options.name ?? connection.serverInfo?.name ?? connection.label;
  const include = options.include ? new Set(options.include) : undefined;
  let tools: AnyTool[];
  try {
    tools = toolsOf(listing, connection, options, { include, server: pluginName, warn });
  } catch (error) {
    // No plugin reaches the caller to dispose: the server is stopped here.
    await connection.close();
    if (StepwiseError.isInstance(error)) throw error;
    throw new StepwiseError(
      ErrorCodes.PLUGIN_INVALID,
      `MCP server ${connection.label} lists a tool Stepwise cannot register: ${messageOf(error)}`,
      { location: connection.label, cause: error },
    );
  }
  for (const wanted of include ?? []) {
    if (!listing.some((descriptor) => descriptor.name === wanted)) {
      warn(`MCP server ${pluginName()} has no tool "${wanted}" (named in include)`);
    }
  }

  return definePlugin({
    get name() {
      return pluginName();
    },
    get version() {
      return connection.serverInfo?.version;
    },
    tools,
    listing,
    get server() {
      return connection.serverInfo;
    },
    get instructions() {
      return connection.instructions;
    },
    get pid() {
      return connection.pid;
    },
    get sandbox() {
      return connection.sandbox;
    },
    dispose: () => connection.close(),
  } as McpPlugin) as McpPlugin;
}

/** The server's name made a Stepwise name, with `_2`, `_3`… kept within the 128 characters a name may have. */
function uniqueToolName(serverName: string, used: ReadonlySet<string>): string {
  const base = stepwiseToolName(serverName);
  let name = base;
  for (let suffix = 2; used.has(name); suffix++) name = `${base.slice(0, 128 - String(suffix).length - 1)}_${suffix}`;
  return name;
}

/** The listing's tools (those `include` names, if any) as Stepwise tools, each name unique. */
function toolsOf(
  listing: readonly McpToolDescriptor[],
  connection: McpConnection,
  options: McpToolsOptions,
  settings: { include: ReadonlySet<string> | undefined; server: () => string; warn: (message: string) => void },
): AnyTool[] {
  const { include, server, warn } = settings;
  const used = new Set<string>();
  const tools: AnyTool[] = [];
  for (const descriptor of listing) {
    if (include && !include.has(descriptor.name)) continue;
    const name = uniqueToolName(descriptor.name, used);
    if (name !== descriptor.name) warn(`MCP tool "${descriptor.name}" is registered as "${name}"`);
    used.add(name);
    tools.push(
      mcpTool(descriptor, connection, {
        name,
        server,
        timeoutMs: options.timeoutMs ?? 60_000,
        warn,
        ...(options.effects?.[descriptor.name] ? { effect: options.effects[descriptor.name] } : {}),
      }),
    );
  }
  return tools;
}
