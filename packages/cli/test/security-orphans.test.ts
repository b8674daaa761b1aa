import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { osSandboxStatus } from '@stepwise/tools-node';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * No orphans: a host SIGKILLed while a command runs leaves that command's process group
 * behind (it was started detached). The journal records the group (`process-start`), and
 * resume kills it before the next step starts. Inside the OS sandbox the command also dies
 * with its host, resume or not.
 */
const HOST = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'orphan-host.mjs');

const LONG = `const { spawn } = require('node:child_process');
const child = spawn(process.execPath, ['-e', "setInterval(() => require('fs').appendFileSync('beat', '.'), 20)"], { stdio: 'ignore' });
require('node:fs').writeFileSync('pids.json', JSON.stringify([process.pid, child.pid]));
setInterval(() => {}, 1000);
`;
const CHECK = `const pids = JSON.parse(require('node:fs').readFileSync('pids.json', 'utf8'));
const alive = pids.filter((pid) => { try { process.kill(pid, 0); return true; } catch { return false; } });
require('node:fs').writeFileSync('check.json', JSON.stringify({ alive }));
`;

let directory: string | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  if (directory) {
    try {
      const pids = JSON.parse(await readFile(path.join(directory, 'ws', 'pids.json'), 'utf8')) as number[];
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone, as it should be.
        }
      }
    } catch {
      // No pids written.
    }
    await rm(directory, { recursive: true, force: true });
  }
  directory = undefined;
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** Starts the host and SIGKILLs it once the long command has journaled its process group. */
async function runAndKill(workspace: string, database: string, sandbox: string): Promise<string> {
  const child = spawn(process.execPath, [HOST, 'run', database, workspace, sandbox], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let runId = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`the long command never started: ${stderr}`)), 30_000);
    child.stdout?.on('data', async (chunk: Buffer) => {
      buffer += chunk.toString();
      for (let newline = buffer.indexOf('\n'); newline !== -1; newline = buffer.indexOf('\n')) {
        const event = JSON.parse(buffer.slice(0, newline)) as { type: string; runId: string };
        buffer = buffer.slice(newline + 1);
        runId = event.runId;
        if (event.type !== 'process-start') continue;
        // Wait until the command wrote its pids and its child beats, then kill the host.
        for (let tries = 0; tries < 200; tries++) {
          if (await stat(path.join(workspace, 'beat')).catch(() => undefined)) break;
          await new Promise((wait) => setTimeout(wait, 25));
        }
        clearTimeout(timer);
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.once('exit', () => resolve());
  });
  await new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve),
  );
  expect(child.signalCode).toBe('SIGKILL');
  return runId;
}

async function resume(workspace: string, database: string, sandbox: string, runId: string) {
  // The killed host's lease (3 s) must expire first.
  for (let attempt = 0; attempt < 40; attempt++) {
    const child = spawn(process.execPath, [HOST, 'resume', database, workspace, sandbox, runId], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code === 0)
      return stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    if (!/E501|lease/i.test(stderr)) throw new Error(`resume failed (${code}): ${stderr}`);
    await new Promise((wait) => setTimeout(wait, 250));
  }
  throw new Error('the lease never expired');
}

async function setUp(): Promise<{ workspace: string; database: string }> {
  directory = await realpath(await mkdtemp(path.join(tmpdir(), 'stepwise-orphans-')));
  const workspace = path.join(directory, 'ws');
  await mkdir(workspace);
  await writeFile(path.join(workspace, 'long.js'), LONG);
  await writeFile(path.join(workspace, 'check.js'), CHECK);
  return { workspace, database: path.join(directory, 'stepwise.db') };
}

const sandboxStatus = await osSandboxStatus();

describe.skipIf(process.platform === 'win32')('no orphaned processes', () => {
  it('resume kills the process group a SIGKILLed host left running, before the next step starts', async () => {
    const { workspace, database } = await setUp();
    const runId = await runAndKill(workspace, database, 'off');
    const pids = JSON.parse(await readFile(path.join(workspace, 'pids.json'), 'utf8')) as number[];
    // Without the OS sandbox nothing kills them: the host is gone and they live on.
    await new Promise((wait) => setTimeout(wait, 300));
    expect(pids.map(isAlive)).toEqual([true, true]);
    const events = await resume(workspace, database, 'off', runId);
    expect(events.find((event) => event.type === 'run-resume')).toMatchObject({
      interrupted: [{ stepId: 'long', action: 'fail' }],
    });
    // What resume killed is journaled (the command's group, led by its first pid), and nothing was left.
    expect(events.find((event) => event.type === 'process-kill')).toMatchObject({ killed: [pids[0]], left: [] });
    // check.js ran as the next step and saw neither process.
    expect(JSON.parse(await readFile(path.join(workspace, 'check.json'), 'utf8'))).toEqual({ alive: [] });
    expect(pids.map(isAlive)).toEqual([false, false]);
    expect(events.find((event) => event.type === 'step-end' && event.stepId === 'next')).toMatchObject({
      result: { status: 'succeeded' },
    });
  }, 90_000);

  it.skipIf(!sandboxStatus.available)(
    `inside the OS sandbox the command dies with its host${sandboxStatus.available ? '' : ` (skipped: ${sandboxStatus.reason})`}`,
    async () => {
      const { workspace, database } = await setUp();
      await runAndKill(workspace, database, 'required');
      await new Promise((wait) => setTimeout(wait, 300));
      const before = (await stat(path.join(workspace, 'beat'))).size;
      await new Promise((wait) => setTimeout(wait, 500));
      expect((await stat(path.join(workspace, 'beat'))).size).toBe(before);
    },
    90_000,
  );
});
