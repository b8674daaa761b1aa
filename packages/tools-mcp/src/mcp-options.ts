import { type Effect, ErrorCodes, StepwiseError } from '@stepwise/core';
import { checkStringRecord, checkStrings, isRecord, pointer } from './option-checks.js';
import { checkSandboxOptions, type McpSandboxMode, type McpSandboxOptions } from './sandbox-options.js';

/** A tool as the server lists it (`tools/list`), kept verbatim so a host can cache it as JSON. */
export interface McpToolDescriptor {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  readonly annotations?: {
    readonly title?: string;
    readonly readOnlyHint?: boolean;
    readonly destructiveHint?: boolean;
    readonly idempotentHint?: boolean;
    readonly openWorldHint?: boolean;
  };
}

/** Options shared by both transports. */
export interface McpCommonOptions {
  /** Plugin name used in messages and by `registry.use`. Default: the server's own `serverInfo.name`. */
  readonly name?: string;
  /**
   * Per-tool effect, by the server's tool name; wins over the annotations
   * (`readOnlyHint` → `read`, `destructiveHint: true` → `destructive`, otherwise `write`).
   */
  readonly effects?: Readonly<Record<string, Effect>>;
  /** Only these server tools become Stepwise tools (by the server's name). Default: all. */
  readonly include?: readonly string[];
  /**
   * Default timeout of every tool of this server, used when the step sets none. The kernel aborts
   * the call when it passes, which cancels the MCP request (`notifications/cancelled`). Default 60 000 ms.
   */
  readonly timeoutMs?: number;
  /** Time allowed to connect, initialize and list the tools. Default 30 000 ms. */
  readonly connectTimeoutMs?: number;
  /**
   * How many times the connection is re-established after the server died or the transport failed,
   * per run (`ctx.runId`). The call that saw the failure fails retryable; the restart happens on the
   * next call. Once the budget is spent, calls fail non-retryable. Default 1.
   */
  readonly maxRestarts?: number;
  /**
   * A tool list saved from an earlier `plugin.listing`. When given, nothing is started or contacted
   * until the first call (fully lazy); the host is responsible for keeping it current.
   */
  readonly knownTools?: readonly McpToolDescriptor[];
  /** Non-fatal problems (a tool schema that does not compile, a renamed tool). Default: `process.emitWarning`. */
  readonly onWarning?: (message: string) => void;
}

/** A server started as a child process speaking MCP over stdin/stdout. */
export interface McpStdioOptions extends McpCommonOptions {
  /** The executable (no shell). Use `process.execPath` and a script path for Node servers. */
  readonly command: string;
  readonly args?: readonly string[];
  /** Variables set for the child, whatever the allowlist says. Values are never logged. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Names (or `PREFIX_*` patterns) inherited from this process's environment on top of
   * `DEFAULT_ENV_ALLOWLIST`. Anything not named here or in `env` is not visible to the server.
   */
  readonly envAllow?: readonly string[];
  /** Working directory of the child. Default: this process's cwd. */
  readonly cwd?: string;
  /** `pipe` (default) keeps the last 8 KiB for error messages; `inherit` forwards it; `ignore` drops it. */
  readonly stderr?: 'pipe' | 'inherit' | 'ignore';
  /**
   * The OS sandbox (bubblewrap, Linux) around the server process. Default `available`: inside it
   * where it starts (no network, only `sandboxOptions.workspace` writable), else unsandboxed with
   * a warning through `onWarning`. `required` refuses to start the server without it (E402).
   */
  readonly sandbox?: McpSandboxMode;
  /** What the sandboxed server may write, read and reach. See `McpSandboxOptions`. */
  readonly sandboxOptions?: McpSandboxOptions;
}

/** A server reached over Streamable HTTP. */
export interface McpHttpOptions extends McpCommonOptions {
  readonly url: string | URL;
  /** Sent with every request (e.g. `Authorization`). */
  readonly headers?: Readonly<Record<string, string>>;
}

export type McpToolsOptions = McpStdioOptions | McpHttpOptions;

export function isStdioOptions(options: McpToolsOptions): options is McpStdioOptions {
  return 'command' in options && options.command !== undefined;
}

const EFFECTS: readonly Effect[] = ['read', 'write', 'destructive', 'exec', 'network'];
const COMMON_KEYS = [
  'name',
  'effects',
  'include',
  'timeoutMs',
  'connectTimeoutMs',
  'maxRestarts',
  'knownTools',
  'onWarning',
] as const;
const STDIO_KEYS = [...COMMON_KEYS, 'command', 'args', 'env', 'envAllow', 'cwd', 'stderr', 'sandbox', 'sandboxOptions'];
const HTTP_KEYS = [...COMMON_KEYS, 'url', 'headers'];

/**
 * Checks options that come from configuration (JSON, YAML) and returns them typed.
 * Every problem is a `StepwiseError` E601 whose `location` is a JSON path under `location`.
 * `mcpTools` calls it too, so hosts only need it to report configuration errors early.
 */
export function validateMcpOptions(value: unknown, location = ''): McpToolsOptions {
  const fail = (path: string, message: string): never => {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `MCP server options${path ? ` at ${path}` : ''}: ${message}`, {
      location: `${location}${path}`,
    });
  };
  if (!isRecord(value)) return fail('', 'expected an object with "command" (stdio) or "url" (Streamable HTTP)');
  const hasCommand = value.command !== undefined;
  const hasUrl = value.url !== undefined;
  if (hasCommand === hasUrl) return fail('', 'give exactly one of "command" (stdio) or "url" (Streamable HTTP)');
  const allowed = hasCommand ? STDIO_KEYS : HTTP_KEYS;
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      fail(`/${pointer(key)}`, `unknown option "${key}" for a ${hasCommand ? 'stdio' : 'HTTP'} server`);
  }
  if (hasCommand) {
    if (typeof value.command !== 'string' || value.command.trim() === '')
      fail('/command', 'expected a non-empty string');
    checkStrings(value.args, '/args', fail);
    checkStrings(value.envAllow, '/envAllow', fail);
    checkStringRecord(value.env, '/env', fail);
    if (value.cwd !== undefined && typeof value.cwd !== 'string') fail('/cwd', 'expected a string');
    if (value.stderr !== undefined && !['pipe', 'inherit', 'ignore'].includes(value.stderr as string)) {
      fail('/stderr', 'expected "pipe", "inherit" or "ignore"');
    }
    checkSandboxOptions(value.sandbox, value.sandboxOptions, fail);
  } else {
    let url: URL | undefined;
    try {
      url = new URL(String(value.url));
    } catch {
      fail('/url', `not a URL: ${String(value.url)}`);
    }
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:') fail('/url', 'expected an http: or https: URL');
    checkStringRecord(value.headers, '/headers', fail);
  }
  if (value.name !== undefined && (typeof value.name !== 'string' || value.name === '')) {
    fail('/name', 'expected a non-empty string');
  }
  checkStrings(value.include, '/include', fail);
  if (value.effects !== undefined) {
    if (!isRecord(value.effects)) fail('/effects', 'expected an object of tool name → effect');
    for (const [tool, effect] of Object.entries(value.effects as Record<string, unknown>)) {
      if (!EFFECTS.includes(effect as Effect))
        fail(`/effects/${pointer(tool)}`, `expected one of ${EFFECTS.join(', ')}`);
    }
  }
  for (const key of ['timeoutMs', 'connectTimeoutMs'] as const) {
    const number = value[key];
    if (number !== undefined && !(typeof number === 'number' && Number.isFinite(number) && number > 0)) {
      fail(`/${key}`, 'expected a positive number of milliseconds');
    }
  }
  if (value.maxRestarts !== undefined && !(Number.isInteger(value.maxRestarts) && (value.maxRestarts as number) >= 0)) {
    fail('/maxRestarts', 'expected a whole number ≥ 0');
  }
  if (value.knownTools !== undefined) {
    if (!Array.isArray(value.knownTools)) fail('/knownTools', 'expected an array of tools/list entries');
    (value.knownTools as unknown[]).forEach((tool, index) => {
      if (!isRecord(tool) || typeof tool.name !== 'string' || !isRecord(tool.inputSchema)) {
        fail(`/knownTools/${index}`, 'expected { name, inputSchema } as listed by the server');
      }
    });
  }
  if (value.onWarning !== undefined && typeof value.onWarning !== 'function') fail('/onWarning', 'expected a function');
  return value as unknown as McpToolsOptions;
}
