import { realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { osSandboxStatus } from '../src/index.js';
import { createHarness, type Harness } from './helpers.js';

/**
 * A command swaps a workspace directory for a symlink to a host directory hidden from it, in a
 * loop, while file_read, dir_list and file_search run on it: none may return the hidden contents.
 * The command is a real sandboxed `run_command` where bubblewrap works (a plain one elsewhere).
 * STEPWISE_RACE_SECONDS sets how long (default 5; the check used 30).
 */
const SECONDS = Number(process.env.STEPWISE_RACE_SECONDS ?? 5);
const SECRET = 'hidden-host-secret-5150';
const status = await osSandboxStatus();

const SWAPPER = `
const fs = require('fs');
const [target, milliseconds] = process.argv.slice(2);
const end = Date.now() + Number(milliseconds);
let swaps = 0;
while (Date.now() < end) {
  try { fs.renameSync('d', 'd-real'); fs.symlinkSync(target, 'd'); swaps++; } catch {}
  try { fs.unlinkSync('d'); } catch {}
  try { fs.renameSync('d-real', 'd'); } catch {}
}
console.log(swaps);
`;

let harness: Harness;
let hidden: string;

beforeAll(async () => {
  harness = await createHarness({
    commands: {
      allow: ['node'],
      sandbox: status.available ? 'required' : 'off',
      checkArguments: false,
      unsafeNoBoundary: true,
    },
  });
  hidden = path.join(harness.outside, 'hidden');
  await mkdir(hidden);
  await writeFile(path.join(hidden, 'file.txt'), `${SECRET} in a file\n`);
  await writeFile(path.join(hidden, `${SECRET}-name.txt`), `${SECRET}\n`);
  await writeFile(path.join(hidden, 'victim.txt'), 'hidden victim\n');
  await mkdir(path.join(harness.workspace, 'd'));
  await writeFile(path.join(harness.workspace, 'd', 'file.txt'), 'inside file\n');
  await writeFile(path.join(harness.workspace, 'swap.js'), SWAPPER);
}, 60_000);

afterAll(() => harness?.cleanup());

/** Calls one tool again and again until `until`, counting results that carry the hidden contents. */
async function hammer(tool: string, args: Record<string, unknown>, until: number) {
  let calls = 0;
  let leaks = 0;
  while (Date.now() < until) {
    const outcome = await harness.call(tool, args);
    calls++;
    if (JSON.stringify(outcome).includes(SECRET)) leaks++;
  }
  return { tool, calls, leaks };
}

/** The old way, as a control: check the real path, then read by path. */
async function naive(until: number) {
  let calls = 0;
  let leaks = 0;
  const file = path.join(harness.workspace, 'd', 'file.txt');
  while (Date.now() < until) {
    calls++;
    try {
      const real = realpathSync(file);
      if (!real.startsWith(`${harness.workspace}${path.sep}`)) continue;
      if ((await readFile(file, 'utf8')).includes(SECRET)) leaks++;
    } catch {
      // Missing in the middle of a swap.
    }
  }
  return { tool: 'naive check-then-read', calls, leaks };
}

describe('file tools against a directory swapped for a symlink in a loop', () => {
  it(
    `return no hidden contents in ${SECONDS} s`,
    async () => {
      const milliseconds = SECONDS * 1000;
      const swapping = harness.call('run_command', {
        command: ['node', 'swap.js', hidden, String(milliseconds)],
        timeoutMs: milliseconds + 30_000,
      });
      // Let the swapper start (bubblewrap needs a moment).
      await new Promise((resolve) => setTimeout(resolve, 300));
      const until = Date.now() + milliseconds - 500;
      const results = await Promise.all([
        hammer('file_read', { path: 'd/file.txt' }, until),
        hammer('dir_list', { path: 'd' }, until),
        hammer('file_search', { query: 'file', path: 'd' }, until),
        hammer('file_search', { query: 'file' }, until),
        hammer('file_glob', { pattern: 'd/**' }, until),
        hammer('file_write', { path: 'd/victim.txt', contents: 'written by a tool\n' }, until),
        hammer('file_delete', { path: 'd/victim.txt' }, until),
        naive(until),
      ]);
      const swapped = await swapping;
      expect(swapped.status).toBe('succeeded');
      const swaps = Number((swapped.output as { stdout: string }).stdout.trim());
      console.log(`race over ${SECONDS} s, ${swaps} swaps:`, JSON.stringify(results));
      expect(swaps).toBeGreaterThan(100);
      // The control reads by path after a check, as the tools did: over a long run it leaks, so the race is real.
      if (SECONDS >= 30) expect(results.at(-1)?.leaks).toBeGreaterThan(0);
      // Nothing written into or deleted from the hidden directory.
      expect((await readdir(hidden)).sort()).toEqual(['file.txt', `${SECRET}-name.txt`, 'victim.txt']);
      expect(await readFile(path.join(hidden, 'victim.txt'), 'utf8')).toBe('hidden victim\n');
      for (const result of results.filter((entry) => entry.tool !== 'naive check-then-read')) {
        expect(result.calls).toBeGreaterThan(0);
        expect({ tool: result.tool, leaks: result.leaks }).toEqual({ tool: result.tool, leaks: 0 });
      }
    },
    (SECONDS + 60) * 1000,
  );
});
