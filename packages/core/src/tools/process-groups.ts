import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ProcessRecord } from './define-tool.js';

/** A process group as the journal records it when a tool starts one (`process-start`). */
export interface RecordedProcess {
  readonly pid: number;
  readonly processGroup: number;
  readonly command?: readonly string[];
  /** The machine and boot the pid belongs to: a pid means nothing on another host or after a reboot. */
  readonly host: string;
  readonly bootId?: string;
  /** The leader's start time in clock ticks since boot (Linux), so a reused pid is not mistaken for it. */
  readonly startTicks?: number;
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot (Linux only). */
function startTicks(pid: number): number | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[19]);
  return Number.isFinite(ticks) ? ticks : undefined;
}

function bootId(): string | undefined {
  return readText('/proc/sys/kernel/random/boot_id')?.trim();
}

/** The `process-start` event's payload for a process group a tool just started. */
export function describeProcess(process: ProcessRecord): RecordedProcess {
  const boot = bootId();
  const ticks = startTicks(process.pid);
  return {
    pid: process.pid,
    processGroup: process.processGroup,
    ...(process.command ? { command: [...process.command] } : {}),
    host: hostname(),
    ...(boot === undefined ? {} : { bootId: boot }),
    ...(ticks === undefined ? {} : { startTicks: ticks }),
  };
}

function groupAlive(group: number): boolean {
  try {
    globalThis.process.kill(-group, 0);
    return true;
  } catch {
    // ESRCH: gone. EPERM: it belongs to someone else, so not ours to kill or wait for.
    return false;
  }
}

/**
 * Is this recorded group still the one the tool started? Only on the same host and boot; and
 * when its leader is alive, only if it started at the recorded time (else the pid was reused).
 * A group whose leader is gone keeps its id reserved by the kernel while any member lives.
 */
function sameGroup(started: RecordedProcess): boolean {
  if (started.host !== hostname()) return false;
  const boot = bootId();
  if (started.bootId !== undefined && boot !== undefined && started.bootId !== boot) return false;
  if (started.startTicks !== undefined) {
    const ticks = startTicks(started.pid);
    if (ticks !== undefined && ticks !== started.startTicks) return false;
  }
  return groupAlive(started.processGroup);
}

/**
 * Kills (SIGKILL) every process group the journal says a crashed call left running (`recorded`:
 * the run's `process-start` records of calls that never ended), and waits
 * until each is gone (at most `timeoutMs`), so resume never runs a step beside an orphan.
 * Returns the groups it killed. Groups on another host, from another boot, or whose pid was
 * reused are left alone. Windows: nothing to do (no process groups to find again).
 */
export async function killOrphanedProcesses(recorded: Iterable<RecordedProcess>, timeoutMs = 5000): Promise<number[]> {
  if (globalThis.process.platform === 'win32') return [];
  const killed: number[] = [];
  for (const started of recorded) {
    if (!sameGroup(started)) continue;
    try {
      globalThis.process.kill(-started.processGroup, 'SIGKILL');
      killed.push(started.processGroup);
    } catch {
      // Gone between the check and the kill.
    }
  }
  const deadline = Date.now() + timeoutMs;
  while (killed.some(groupAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return killed;
}
