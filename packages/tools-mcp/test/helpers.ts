import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ApprovalOptions,
  MemoryStore,
  type Plan,
  type RunResult,
  type RunStore,
  type StepResult,
  ToolRegistry,
} from '@stepwise/core';
import { finishRun, invokeStep, startRun } from '@stepwise/core/engine';
import { afterEach, beforeEach } from 'vitest';
import { type McpPlugin, type McpStdioOptions, mcpTools } from '../src/index.js';

const require = createRequire(import.meta.url);

export function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

/** Options that start one of our fixture servers with this Node. */
export function fixtureServer(name: string, extra: Partial<McpStdioOptions> = {}): McpStdioOptions {
  return { command: process.execPath, args: [fixture(name)], ...extra };
}

/** The JS entry of a published server package (run with process.execPath, never npx). */
export function serverEntry(name: 'filesystem' | 'memory'): string {
  return require.resolve(`@modelcontextprotocol/server-${name}/dist/index.js`);
}

/**
 * True while `pid` runs. A zombie (killed, not yet reaped: an orphan waits for init to reap it,
 * which some container inits do slowly) counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    // No procfs (macOS): kill(pid, 0) is all there is.
    return true;
  }
}

export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function temporaryDirectory(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'stepwise-mcp-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export const approveEverything: ApprovalOptions = { handler: async () => true };

/**
 * Runs a plan's steps in array order through the core step kernel (no engine): enough to test
 * what the plugin does with one call, with retries up to `maxAttempts` for retryable failures.
 */
export async function runWithKernel(
  plan: Plan,
  registry: ToolRegistry,
  options: { store?: RunStore; approvals?: ApprovalOptions; maxAttempts?: number; signal?: AbortSignal } = {},
): Promise<RunResult> {
  const store = options.store ?? new MemoryStore();
  const runId = `run_${randomUUID()}`;
  const started = performance.now();
  const journal = await startRun({ store, runId, plan, engine: 'kernel' });
  const results: StepResult[] = [];
  const outputs = new Map<string, unknown>();
  for (const step of plan.steps) {
    let result: StepResult;
    let attempt = 1;
    for (;;) {
      result = await invokeStep(
        step,
        { attempt, references: 'resolve', outputs },
        {
          runId,
          journal,
          registry,
          approvals: options.approvals ?? approveEverything,
          ...(options.signal ? { signal: options.signal } : {}),
        },
      );
      if (result.status !== 'failed' || !result.error?.retryable || attempt >= (options.maxAttempts ?? 1)) break;
      attempt++;
    }
    results.push(result);
    if (result.status === 'succeeded') outputs.set(step.id, result.output);
  }
  return finishRun(journal, {
    plan,
    engine: 'kernel',
    status: results.every((result) => result.status === 'succeeded')
      ? 'completed'
      : results.some((result) => result.status === 'cancelled')
        ? 'cancelled'
        : 'failed',
    steps: results,
    durationMs: performance.now() - started,
  });
}

/** Per-test temp directory and plugins, disposed after each test. */
export function pluginScope() {
  const scope = {
    directory: '',
    plugins: [] as McpPlugin[],
    /**
     * Starts a fixture server as a plugin, registered (unprefixed) in a new registry. Where the
     * OS sandbox runs it (the default mode), the test's directory is its workspace: the only
     * place it can write its logs and markers.
     */
    async load(name: string, options: Partial<McpStdioOptions> = {}) {
      const plugin = await mcpTools(
        fixtureServer(name, { sandboxOptions: { workspace: scope.directory }, ...options }),
      );
      scope.plugins.push(plugin);
      const registry = new ToolRegistry();
      await registry.use(plugin);
      return { plugin, registry };
    },
  };
  let remove: () => Promise<void> = async () => undefined;
  beforeEach(async () => {
    const created = await temporaryDirectory();
    scope.directory = created.path;
    remove = created.remove;
  });
  afterEach(async () => {
    await Promise.all(scope.plugins.splice(0).map((plugin) => plugin.dispose()));
    await remove();
  });
  return scope;
}
