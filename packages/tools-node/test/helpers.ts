import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MemoryStore, ToolRegistry } from '@stepwise/core';
import { callTool, RunJournal, type ToolCallOutcome } from '@stepwise/core/engine';
import { type NodeToolsOptions, nodeTools } from '../src/index.js';

export interface Harness {
  /** Parent of the workspace (holds `outside/` and the `<ws>-evil` sibling). */
  readonly base: string;
  /** The workspace root (real path). */
  readonly workspace: string;
  /** A directory outside the workspace. */
  readonly outside: string;
  readonly registry: ToolRegistry;
  /** Calls a tool through the kernel (schema validation, journal, redaction) like an engine would. */
  call(tool: string, args: Record<string, unknown>): Promise<ToolCallOutcome>;
  cleanup(): Promise<void>;
}

/** A real temporary workspace with the plugin registered in a fresh registry. */
export async function createHarness(options: Partial<NodeToolsOptions> = {}): Promise<Harness> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), 'stepwise-tools-')));
  const workspace = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await mkdir(workspace);
  await mkdir(outside);
  const registry = new ToolRegistry();
  await registry.use(nodeTools({ workspace, ...options }));
  const journal = new RunJournal({ runId: 'run_test', store: new MemoryStore() });
  let counter = 0;
  return {
    base,
    workspace,
    outside,
    registry,
    async call(tool, args) {
      counter++;
      return callTool(
        { stepId: `step${counter}`, tool, args, attempt: 1, executionId: `execution${counter}` },
        {
          runId: 'run_test',
          journal,
          registry,
          workspace,
          // The tools are under test, not the approval policy: every effect runs.
          approvals: { policy: { effects: { exec: 'auto', destructive: 'auto' } } },
        },
      );
    },
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/** Is a process still running (a zombie waiting for a reaper counts as gone)? */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const { readFile } = await import('node:fs/promises');
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}
