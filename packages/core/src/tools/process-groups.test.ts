import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../journal/events.js';
import { type FoldedRun, foldRun } from '../journal/fold-run.js';
import { describeProcess, killOrphanedProcesses, type RecordedProcess } from './process-groups.js';

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

/** A detached process: the leader of a new process group, as a command tool starts one. */
function startGroup(script = 'setInterval(() => {}, 1000)'): number {
  const child = spawn(process.execPath, ['-e', script], { detached: true, stdio: 'ignore' });
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

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

/** A journal whose calls never ended, with these `process-start` payloads (forged or not). */
function journal(records: readonly object[], extra: Partial<Record<string, unknown>>[] = []) {
  const base = { runId: 'run_p', at: new Date().toISOString() };
  const events: Record<string, unknown>[] = [
    { ...base, type: 'run-start', planId: 'p', planDigest: 'd', plan: { id: 'p', steps: [] }, engine: 'dag' },
    ...records.flatMap((record, index) => [
      { ...base, type: 'step-start', stepId: `s${index}`, tool: 'run_command', attempt: 1, executionId: `ex_${index}` },
      { ...base, type: 'process-start', stepId: `s${index}`, executionId: `ex_${index}`, ...record },
    ]),
    ...extra.map((event) => ({ ...base, ...event })),
  ];
  return events.map((event, index) => ({ ...event, seq: index + 1 }) as unknown as RunEvent);
}

const truthful = (pid: number) => describeProcess({ pid, processGroup: pid, command: ['node'] });

/** Field `field` (as numbered in proc(5)) of /proc/<pid>/stat. */
function statField(pid: number | 'self', field: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[field - 3]);
}

describe.skipIf(process.platform === 'win32')('orphaned process groups', () => {
  it('the fold keeps a group until its call ends', () => {
    const record = truthful(process.pid);
    expect([...foldRun(journal([record])).processes.keys()]).toEqual(['ex_0']);
    const ended = journal(
      [record],
      [{ type: 'tool-result', stepId: 's0', executionId: 'ex_0', status: 'succeeded', durationMs: 1, attempt: 1 }],
    );
    expect(foldRun(ended).processes.size).toBe(0);
  });

  it.skipIf(process.platform !== 'linux')(
    'kills a group recorded truthfully that is still alive, and waits until it is gone',
    async () => {
      const pid = startGroup();
      await settle();
      expect(alive(pid)).toBe(true);
      expect(await killOrphanedProcesses(orphansOf(foldRun(journal([truthful(pid)]))))).toEqual({
        killed: [pid],
        left: [],
      });
      expect(alive(pid)).toBe(false);
    },
  );
});

/**
 * Forged `process-start` rows, as a command that can write its own journal would write them. None
 * may kill anything: the victim group (a real, unrelated process group), this test process, its
 * group and its parents all live on, and each forged row is reported with why it was left.
 */
describe.skipIf(process.platform !== 'linux')('forged process-start records', () => {
  it('kill nothing unrelated, and each is reported with its reason', async () => {
    const victim = startGroup();
    await settle();
    const forger = startGroup();
    await settle();
    expect(truthful(forger).startTicks).not.toBe(truthful(victim).startTicks);
    const own = truthful(forger);
    const ownGroup = statField('self', 5);
    const parent = statField('self', 4);
    const victimTicks = truthful(victim).startTicks as number;
    const forged: [string, object, string][] = [
      ["group 0 (the resumer's own group)", { ...own, pid: 0, processGroup: 0 }, 'invalid'],
      ['group 1 (init; kill(-1) is everything)', { ...own, pid: 1, processGroup: 1 }, 'invalid'],
      ['group -1', { ...own, pid: -1, processGroup: -1 }, 'invalid'],
      ['the victim named negative', { ...own, pid: -victim, processGroup: -victim }, 'invalid'],
      ['NaN', { ...own, pid: Number.NaN, processGroup: Number.NaN }, 'invalid'],
      ['a string', { ...own, pid: String(victim), processGroup: String(victim) }, 'invalid'],
      ['a huge number', { ...own, pid: 2 ** 32 + victim, processGroup: 2 ** 32 + victim }, 'invalid'],
      [
        'the largest safe integer',
        { ...own, pid: Number.MAX_SAFE_INTEGER, processGroup: Number.MAX_SAFE_INTEGER },
        'invalid',
      ],
      ['a fraction', { ...own, pid: victim + 0.5, processGroup: victim + 0.5 }, 'invalid'],
      ['Infinity', { ...own, pid: Number.POSITIVE_INFINITY, processGroup: Number.POSITIVE_INFINITY }, 'invalid'],
      ['null', { ...own, pid: null, processGroup: null }, 'invalid'],
      ['an array', { ...own, pid: [victim], processGroup: [victim] }, 'invalid'],
      ['the resumer itself', truthful(process.pid), 'own-group'],
      ["the resumer's group", { ...own, pid: ownGroup, processGroup: ownGroup }, 'own-group'],
      ["the resumer's parent", { ...own, pid: parent, processGroup: parent }, 'own-group'],
      [
        'the victim, start time kept from the forger',
        { ...own, pid: victim, processGroup: victim },
        'start-time-mismatch',
      ],
      [
        'the victim, without a start time',
        { ...own, pid: victim, processGroup: victim, startTicks: undefined },
        'no-start-time',
      ],
      [
        'the victim, start time a string',
        { ...own, pid: victim, processGroup: victim, startTicks: String(victimTicks) },
        'no-start-time',
      ],
      ['the victim, no boot id', { ...truthful(victim), bootId: undefined }, 'no-start-time'],
      ['the victim, another boot', { ...truthful(victim), bootId: 'another-boot' }, 'other-boot'],
      ['the victim, another host', { ...truthful(victim), host: `${hostname()}-other` }, 'other-host'],
      [
        'the victim, reused pid (start time off by one)',
        { ...truthful(victim), startTicks: victimTicks - 1 },
        'start-time-mismatch',
      ],
      ["the victim's group under the forger's pid", { ...own, processGroup: victim }, 'not-leader'],
      ["the forger's pid under the victim's group", { ...own, pid: victim }, 'not-leader'],
    ];
    const result = await killOrphanedProcesses(orphansOf(foldRun(journal(forged.map(([, record]) => record)))));
    expect(result.killed).toEqual([]);
    expect(result.left.map((entry, index) => [forged[index]?.[0], entry.reason])).toEqual(
      forged.map(([name, , reason]) => [name, reason]),
    );
    expect([alive(victim), alive(forger), processAlive(process.pid), alive(ownGroup), processAlive(parent)]).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
  });

  it('leaves a group whose leader exited alone (nothing to compare), and ignores a group that is gone', async () => {
    // The leader starts a member in its own group and exits; the member lives on.
    const leader = startGroup(
      "require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }).unref(); setTimeout(() => process.exit(0), 300)",
    );
    await settle();
    const record = truthful(leader);
    expect(record.startTicks).toBeTypeOf('number');
    for (let tries = 0; tries < 100 && processAlive(leader); tries++) await settle();
    expect([processAlive(leader), alive(leader)]).toEqual([false, true]);
    // Recorded while it runs (a truthful record has its start time), then left to exit.
    const gone = startGroup('setTimeout(() => {}, 400)');
    for (let tries = 0; tries < 100 && truthful(gone).startTicks === undefined; tries++) await settle();
    const goneRecord = truthful(gone);
    expect(goneRecord.startTicks).toBeTypeOf('number');
    for (let tries = 0; tries < 100 && alive(gone); tries++) await settle();

    const result = await killOrphanedProcesses([record, goneRecord] as RecordedProcess[]);
    expect(result).toEqual({ killed: [], left: [{ pid: leader, processGroup: leader, reason: 'leader-gone' }] });
    expect(alive(leader)).toBe(true);
  });

  it('kills the truthful orphan among forged rows, and only it', async () => {
    const victim = startGroup();
    // Start times count clock ticks (10 ms): two processes started in one tick cannot be told apart.
    await settle();
    const orphan = startGroup();
    await settle();
    expect(truthful(orphan).startTicks).not.toBe(truthful(victim).startTicks);
    const records = [
      { ...truthful(orphan), pid: victim, processGroup: victim },
      truthful(orphan),
      { ...truthful(orphan), pid: 1, processGroup: 1 },
      truthful(orphan),
    ];
    const result = await killOrphanedProcesses(orphansOf(foldRun(journal(records))));
    expect(result.killed).toEqual([orphan]);
    expect(result.left.map((entry) => entry.reason)).toEqual(['start-time-mismatch', 'invalid']);
    expect([alive(orphan), alive(victim)]).toEqual([false, true]);
  });
});
