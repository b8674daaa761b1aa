import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../journal/events.js';
import { type FoldedRun, foldRun } from '../journal/fold-run.js';
import { describeProcess, killOrphanedProcesses } from './process-groups.js';

const children: ChildProcess[] = [];
const orphansOf = (run: FoldedRun) => [...run.processes.values()].flat();
afterEach(() => {
  for (const child of children.splice(0)) {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

function startGroup(): number {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
  child.unref();
  children.push(child);
  return child.pid as number;
}

function alive(group: number): boolean {
  try {
    process.kill(-group, 0);
    return true;
  } catch {
    return false;
  }
}

function journal(extra: Partial<Record<string, unknown>>[], pid: number): RunEvent[] {
  const base = { runId: 'run_p', at: new Date().toISOString() };
  const events: Record<string, unknown>[] = [
    { ...base, type: 'run-start', planId: 'p', planDigest: 'd', plan: { id: 'p', steps: [] }, engine: 'dag' },
    { ...base, type: 'step-start', stepId: 'a', tool: 'run_command', attempt: 1, executionId: 'ex_a' },
    {
      ...base,
      type: 'process-start',
      stepId: 'a',
      executionId: 'ex_a',
      ...describeProcess({ pid, processGroup: pid, command: ['node'] }),
    },
    ...extra.map((event) => ({ ...base, ...event })),
  ];
  return events.map((event, index) => ({ ...event, seq: index + 1 }) as unknown as RunEvent);
}

describe.skipIf(process.platform === 'win32')('orphaned process groups', () => {
  it('the fold keeps a group until its call ends', () => {
    const pid = 4_000_000;
    expect([...foldRun(journal([], pid)).processes.keys()]).toEqual(['ex_a']);
    const ended = journal(
      [{ type: 'tool-result', stepId: 'a', executionId: 'ex_a', status: 'succeeded', durationMs: 1, attempt: 1 }],
      pid,
    );
    expect(foldRun(ended).processes.size).toBe(0);
  });

  it('kills a recorded group that is still alive, and waits until it is gone', async () => {
    const pid = startGroup();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive(pid)).toBe(true);
    expect(await killOrphanedProcesses(orphansOf(foldRun(journal([], pid))))).toEqual([pid]);
    expect(alive(pid)).toBe(false);
  });

  it('leaves alone a group recorded on another host, or whose pid now belongs to another process', async () => {
    const pid = startGroup();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const events = journal([], pid);
    const started = events[2] as unknown as Record<string, unknown>;
    const otherHost = events.map((event) => (event === events[2] ? { ...started, host: 'another-host' } : event));
    expect(await killOrphanedProcesses(orphansOf(foldRun(otherHost as RunEvent[])))).toEqual([]);
    if (started.startTicks !== undefined) {
      const reused = events.map((event) =>
        event === events[2] ? { ...started, startTicks: (started.startTicks as number) - 1 } : event,
      );
      expect(await killOrphanedProcesses(orphansOf(foldRun(reused as RunEvent[])))).toEqual([]);
    }
    expect(alive(pid)).toBe(true);
  });
});
