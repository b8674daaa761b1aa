import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCodes, ToolError } from '@stepwise/core';
import { trackChild, untrackChild } from './child-reaper.js';
import { type EgressProxy, startEgressProxy } from './egress-proxy.js';
import type { HostPattern } from './host-allow-list.js';
import { isStdioOptions, type McpToolDescriptor, type McpToolsOptions } from './mcp-options.js';
import { scrubSecrets } from './scrub-secrets.js';
import { type McpSandboxStatus, serverLaunch } from './server-launch.js';

/** How many pages of `tools/list` a server may hand out. */
const MAX_TOOL_PAGES = 1_000;

/** Keeps this much of a server's stderr for error messages. */
const STDERR_TAIL_BYTES = 8192;
/** Restart budgets are kept for this many runs; older runs are forgotten. */
const REMEMBERED_RUNS = 256;
/** The SDK's own request timeout is disabled (largest timer Node accepts): the kernel owns time. */
const NO_SDK_TIMEOUT = 2_147_483_647;

/** Resolves once `pid` no longer exists (or after `limitMs`, if something else keeps it alive). */
async function exited(pid: number, limitMs = 2000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface ServerInfo {
  readonly name: string;
  readonly version: string;
}

/** What `client()` hands out: a live client and the generation it belongs to. */
export interface LiveClient {
  readonly client: Client;
  readonly transport: Transport;
  readonly generation: number;
}

/**
 * One logical connection to one MCP server. Connects on demand (single flight), notices when
 * the server dies or the transport fails, reconnects on the next call within a per-run budget,
 * and closes (killing the child) on `close`.
 */
export class McpConnection {
  readonly #options: McpToolsOptions;
  readonly #label: string;
  #live: LiveClient | undefined;
  #connecting: Promise<LiveClient> | undefined;
  #generation = 0;
  /** The previous connection ended without us closing it. */
  #lost = false;
  #closed = false;
  #pid: number | undefined;
  #stderrTail = '';
  #serverInfo: ServerInfo | undefined;
  #instructions: string | undefined;
  readonly #restarts = new Map<string, number>();
  readonly #warn: (message: string) => void;
  #sandbox: McpSandboxStatus | undefined;
  /** Secret values of the running server's environment, scrubbed from what it sends back. */
  #secrets: readonly string[] = [];
  /** The egress proxy of a sandboxed server with `allowHosts`: started once, stopped by `close`. */
  #egress: Promise<EgressProxy> | undefined;
  readonly #refusedTargets = new Set<string>();

  constructor(options: McpToolsOptions, warn: (message: string) => void = () => undefined) {
    this.#options = options;
    this.#warn = warn;
    this.#label = isStdioOptions(options) ? [options.command, ...(options.args ?? [])].join(' ') : String(options.url);
  }

  /** The command line or URL, for messages. */
  get label(): string {
    return this.#label;
  }

  /** Pid of the running child (stdio only). */
  get pid(): number | undefined {
    return this.#pid;
  }

  get serverInfo(): ServerInfo | undefined {
    return this.#serverInfo;
  }

  get instructions(): string | undefined {
    return this.#instructions;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The last few KiB the server wrote to stderr (stdio with `stderr: 'pipe'`), secrets scrubbed. */
  get stderrTail(): string {
    return this.scrub(this.#stderrTail);
  }

  /** How the stdio server runs (sandboxed or not); undefined before its first start and for HTTP. */
  get sandbox(): McpSandboxStatus | undefined {
    return this.#sandbox;
  }

  /** `value` with the secret values of the server's environment replaced by `[REDACTED]`. */
  scrub<T>(value: T): T {
    return scrubSecrets(value, this.#secrets);
  }

  /** True when `generation` is no longer the live connection (the server died or was replaced). */
  isStale(generation: number): boolean {
    return this.#live?.generation !== generation;
  }

  /**
   * A live client; connects (or reconnects, within `maxRestarts` per run) when there is none.
   * `runId` is undefined for the initial listing.
   */
  async client(runId?: string): Promise<LiveClient> {
    if (this.#closed) throw this.#closedError();
    if (this.#live) return this.#live;
    if (this.#connecting) return this.#connecting;
    if (this.#lost && runId !== undefined) {
      const used = this.#restarts.get(runId) ?? 0;
      const budget = this.#options.maxRestarts ?? 1;
      if (used >= budget) {
        throw new ToolError({
          code: ErrorCodes.TOOL_FAILED,
          message: `MCP server ${this.#name()} stopped again after ${used} restart${used === 1 ? '' : 's'} in this run; not restarting it${this.#stderrNote()}`,
          retryable: false,
          location: this.#label,
        });
      }
      this.#restarts.delete(runId);
      this.#restarts.set(runId, used + 1);
      if (this.#restarts.size > REMEMBERED_RUNS) this.#restarts.delete(this.#restarts.keys().next().value as string);
    }
    const connecting = this.#connect().finally(() => {
      if (this.#connecting === connecting) this.#connecting = undefined;
    });
    this.#connecting = connecting;
    return connecting;
  }

  /**
   * Lists every tool, following `nextCursor` until the server has no more pages: at most
   * MAX_TOOL_PAGES pages, all within `connectTimeoutMs` (a server handing out new cursors for ever
   * would otherwise keep `mcpTools` waiting for ever).
   */
  async listTools(): Promise<McpToolDescriptor[]> {
    const { client } = await this.client();
    const tools: McpToolDescriptor[] = [];
    const seenCursors = new Set<string>();
    const timeoutMs = this.#options.connectTimeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    let cursor: string | undefined;
    do {
      const left = deadline - Date.now();
      if (left <= 0 || seenCursors.size >= MAX_TOOL_PAGES) {
        throw new Error(
          `the server kept paging its tools past ${left <= 0 ? `connectTimeoutMs (${timeoutMs} ms)` : `${MAX_TOOL_PAGES} pages`}`,
        );
      }
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: left });
      tools.push(...(page.tools as McpToolDescriptor[]));
      cursor = page.nextCursor;
      // A server that hands out the same cursor twice would page forever.
      if (cursor !== undefined && seenCursors.has(cursor)) break;
      if (cursor !== undefined) seenCursors.add(cursor);
    } while (cursor !== undefined);
    return tools;
  }

  /** Marks the connection broken (after a transport failure) so the next call reconnects. */
  async abandon(generation: number): Promise<void> {
    const live = this.#live;
    if (!live || live.generation !== generation) return;
    this.#live = undefined;
    this.#lost = true;
    await live.client.close().catch(() => undefined);
  }

  /** Closes the connection and kills the child; later calls fail. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const connecting = this.#connecting;
    if (connecting) await connecting.catch(() => undefined);
    const live = this.#live;
    this.#live = undefined;
    const pid = this.#pid;
    if (live?.transport instanceof StreamableHTTPClientTransport) {
      // Tell a stateful server the session is over; do not let an unresponsive one hold up dispose.
      await Promise.race([
        live.transport.terminateSession().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 2000).unref()),
      ]);
    }
    // For stdio this ends stdin, waits, then sends SIGTERM, waits, then SIGKILL (without waiting).
    if (live) await live.client.close().catch(() => undefined);
    if (pid !== undefined) await exited(pid);
    const egress = this.#egress;
    this.#egress = undefined;
    if (egress) await (await egress.catch(() => undefined))?.close();
  }

  /** The request options every tool call uses. */
  static callOptions(signal: AbortSignal, onProgress?: (progress: number, total?: number) => void) {
    return {
      signal,
      timeout: NO_SDK_TIMEOUT,
      ...(onProgress
        ? { onprogress: ({ progress, total }: { progress: number; total?: number }) => onProgress(progress, total) }
        : {}),
    };
  }

  #name(): string {
    return `"${this.#options.name ?? this.#serverInfo?.name ?? this.#label}"`;
  }

  #stderrNote(): string {
    const tail = this.#stderrTail.trim();
    return tail ? `; stderr: ${tail.slice(-1000)}` : '';
  }

  #closedError(): ToolError {
    return new ToolError({
      code: ErrorCodes.TOOL_FAILED,
      message: `MCP server ${this.#name()} was disposed`,
      retryable: false,
      location: this.#label,
    });
  }

  async #connect(): Promise<LiveClient> {
    const generation = ++this.#generation;
    const transport = await this.#transport();
    const client = new Client({ name: 'stepwise', version: '0.1.0' }, { capabilities: {} });
    client.onclose = () => {
      if (this.#live?.generation === generation) {
        this.#live = undefined;
        if (!this.#closed) this.#lost = true;
      }
    };
    // Transport errors also surface as rejected requests or a close; keep the SDK from logging them.
    client.onerror = () => undefined;
    try {
      await client.connect(transport, { timeout: this.#options.connectTimeoutMs ?? 30_000 });
    } catch (error) {
      // Closing the client closes the transport, which ends (and if need be kills) the child.
      await client.close().catch(() => undefined);
      throw error;
    }
    if (this.#closed) {
      await client.close().catch(() => undefined);
      throw this.#closedError();
    }
    const version = client.getServerVersion();
    if (version) this.#serverInfo = { name: version.name, version: version.version };
    this.#instructions = client.getInstructions();
    const live = { client, transport, generation };
    this.#live = live;
    return live;
  }

  /** The egress proxy's socket, started on the first sandboxed start that needs it. */
  #egressSocket(hosts: readonly HostPattern[]): Promise<string> {
    this.#egress ??= startEgressProxy({
      allow: hosts,
      onRefused: (target, reason) => {
        if (this.#refusedTargets.has(target)) return;
        this.#refusedTargets.add(target);
        this.#warn(`MCP server ${this.#name()}: refused a connection to ${target}: ${reason}`);
      },
    });
    return this.#egress.then((proxy) => proxy.socketPath);
  }

  async #transport(): Promise<Transport> {
    const options = this.#options;
    if (!isStdioOptions(options)) {
      return new StreamableHTTPClientTransport(new URL(String(options.url)), {
        ...(options.headers ? { requestInit: { headers: { ...options.headers } } } : {}),
      });
    }
    const launch = await serverLaunch(options, this.#label, (hosts) => this.#egressSocket(hosts));
    if (launch.sandbox.reason === 'unavailable' && this.#sandbox?.reason !== 'unavailable') {
      this.#warn(
        `MCP server ${this.#name()} runs without the OS sandbox (sandbox: "available"): ${launch.sandbox.detail}`,
      );
    }
    this.#sandbox = launch.sandbox;
    this.#secrets = launch.secrets;
    const transport = new StdioClientTransport({
      command: launch.command,
      args: [...launch.args],
      env: launch.env,
      stderr: options.stderr ?? 'pipe',
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    this.#stderrTail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    let pid: number | undefined;
    const start = transport.start.bind(transport);
    transport.start = async () => {
      await start();
      pid = transport.pid ?? undefined;
      this.#pid = pid;
      if (pid !== undefined) trackChild(pid);
    };
    // The SDK keeps a handler set before connect() and calls it first when the child exits.
    transport.onclose = () => {
      if (pid !== undefined) untrackChild(pid);
      if (this.#pid === pid) this.#pid = undefined;
    };
    return transport;
  }
}
