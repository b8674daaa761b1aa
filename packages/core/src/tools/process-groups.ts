import { existsSync, readFileSync } from 'node:fs';
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

/**
 * Why resume left a recorded process group alone. Each means the group could not be proven to be
 * the one the crashed call started, so killing it might kill someone else's processes:
 * - `invalid`: the pid or group is not an integer above 1 (0 is the caller's own group, -1 and 1
 *   every process it may signal);
 * - `not-leader`: the group is not named by the recorded pid (a tool records the leader it started);
 * - `own-group`: the group is the resuming process's own, or its leader is the resuming process or
 *   one of its ancestors (the shell, the terminal, a supervisor);
 * - `other-host`, `other-boot`: recorded on another machine, or before a reboot;
 * - `no-start-time`: the record has no leader start time (or no boot id) to compare;
 * - `no-proc`: this system has no `/proc` to read the live leader's start time from (not Linux);
 * - `leader-gone`: the leader exited, but processes of its group still live (nothing to compare);
 * - `start-time-mismatch`: the pid now belongs to another process (reused);
 * - `group-mismatch`: the live leader now leads another group;
 * - `not-permitted`: the system refused the signal (another user's processes).
 */
export type ProcessLeftReason =
  | 'invalid'
  | 'not-leader'
  | 'own-group'
  | 'other-host'
  | 'other-boot'
  | 'no-start-time'
  | 'no-proc'
  | 'leader-gone'
  | 'start-time-mismatch'
  | 'group-mismatch'
  | 'not-permitted';

/** A recorded group resume did not kill, as recorded (a forged record's values may be anything). */
export interface ProcessLeft {
  readonly pid: unknown;
  readonly processGroup: unknown;
  readonly reason: ProcessLeftReason;
}

/** What `killOrphanedProcesses` did. A group that no longer exists is in neither list. */
export interface OrphanedProcesses {
  /** Process groups killed (SIGKILL) and waited for. */
  readonly killed: readonly number[];
  /** Groups left alone because they could not be proven to be the recorded ones. */
  readonly left: readonly ProcessLeft[];
}

/** The largest pid a kernel hands out (Linux caps pid_max at 2^22; `kill` takes a 32-bit pid). */
const MAX_PID = 2 ** 31 - 1;

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Fields 3 onwards of /proc/<pid>/stat (Linux), or undefined when the process does not exist. */
function statFields(pid: number | 'self'): string[] | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  return stat === undefined ? undefined : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A numeric field of /proc/<pid>/stat by its number in proc(5): 5 is the group, 22 the start time. */
function statNumber(fields: readonly string[] | undefined, field: number): number | undefined {
  const value = Number(fields?.[field - 3]);
  return fields && Number.isSafeInteger(value) ? value : undefined;
}

function bootId(): string | undefined {
  return readText('/proc/sys/kernel/random/boot_id')?.trim();
}

/** The `process-start` event's payload for a process group a tool just started. */
export function describeProcess(process: ProcessRecord): RecordedProcess {
  const boot = bootId();
  const ticks = statNumber(statFields(process.pid), 22);
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
 * This process, its group, and the pids and groups of its ancestors (the shell, the terminal, a
 * supervisor): never a recorded command's group, whatever a record says.
 */
function protectedGroups(): Set<number> {
  const groups = new Set<number>([globalThis.process.pid]);
  let fields = statFields('self');
  for (let hops = 0; fields !== undefined && hops < 64; hops++) {
    const group = statNumber(fields, 5);
    const parent = statNumber(fields, 4);
    if (group !== undefined) groups.add(group);
    if (parent === undefined || parent <= 1) break;
    groups.add(parent);
    fields = statFields(parent);
  }
  return groups;
}

/** Checks that need nothing but the record and this process: never a signal, never /proc of the pid. */
function recordProblem(started: RecordedProcess, protectedSet: ReadonlySet<number>): ProcessLeftReason | undefined {
  const { pid, processGroup } = started;
  const valid = (value: unknown) =>
    Number.isSafeInteger(value) && (value as number) > 1 && (value as number) <= MAX_PID;
  if (!valid(pid) || !valid(processGroup)) return 'invalid';
  if (pid !== processGroup) return 'not-leader';
  if (protectedSet.has(processGroup)) return 'own-group';
  if (started.host !== hostname()) return 'other-host';
  if (!existsSync('/proc/self/stat')) return 'no-proc';
  if (typeof started.startTicks !== 'number' || typeof started.bootId !== 'string') return 'no-start-time';
  const boot = bootId();
  if (boot === undefined) return 'no-proc';
  if (started.bootId !== boot) return 'other-boot';
  return undefined;
}

/**
 * Is this recorded group, still alive, provably the one the tool started? Its leader must be alive,
 * have started at the recorded time and still lead the group. `undefined` with `gone` when nothing
 * of the group is left (nothing to kill, nothing to report).
 */
function liveProblem(started: RecordedProcess): ProcessLeftReason | 'gone' | undefined {
  const fields = statFields(started.pid);
  if (fields === undefined) return groupAlive(started.processGroup) ? 'leader-gone' : 'gone';
  if (statNumber(fields, 22) !== started.startTicks) return 'start-time-mismatch';
  if (statNumber(fields, 5) !== started.processGroup) return 'group-mismatch';
  return undefined;
}

/**
 * Kills (SIGKILL) every process group the journal says a crashed call left running (`recorded`:
 * the run's `process-start` records of calls that never ended), and waits until each is gone (at
 * most `timeoutMs`), so resume never runs a step beside an orphan.
 *
 * A group is killed only when it is proven to be the recorded one: a pid and group above 1 that
 * name the leader, not this process or its group, on this host and boot, with the live leader
 * started at the recorded time (Linux `/proc`). Anything else — a forged or garbled record, a
 * reused pid, a leader that exited, a system without `/proc` — is left alone and returned in
 * `left` with the reason. Windows: nothing to do (no process groups to find again).
 */
export async function killOrphanedProcesses(
  recorded: Iterable<RecordedProcess>,
  timeoutMs = 5000,
): Promise<OrphanedProcesses> {
  if (globalThis.process.platform === 'win32') return { killed: [], left: [] };
  const killed: number[] = [];
  const left: ProcessLeft[] = [];
  const leave = (started: RecordedProcess, reason: ProcessLeftReason) =>
    left.push({ pid: started.pid, processGroup: started.processGroup, reason });
  const protectedSet = protectedGroups();
  for (const started of recorded) {
    const problem = recordProblem(started, protectedSet) ?? liveProblem(started);
    if (problem === 'gone') continue;
    if (problem !== undefined) {
      leave(started, problem);
      continue;
    }
    if (killed.includes(started.processGroup)) continue;
    try {
      globalThis.process.kill(-started.processGroup, 'SIGKILL');
      killed.push(started.processGroup);
    } catch (error) {
      // ESRCH: gone between the check and the kill. EPERM: not ours.
      if ((error as NodeJS.ErrnoException).code === 'EPERM') leave(started, 'not-permitted');
    }
  }
  const deadline = Date.now() + timeoutMs;
  while (killed.some(groupAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return { killed, left };
}
