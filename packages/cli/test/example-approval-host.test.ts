import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readAll } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, skipMessage, withChromiumPage } from '../../../scripts/headless-chromium.js';

const example = fileURLToPath(new URL('../../../examples/approval-host/', import.meta.url));
const run = promisify(execFile);

let workspace: string;
let host: ChildProcess | undefined;

/** Starts `serve.mjs` and resolves with the page's address once it listens. */
function serve(): Promise<string> {
  return new Promise((resolve, reject) => {
    host = spawn(process.execPath, [path.join(example, 'serve.mjs'), '--workspace', workspace, '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => reject(new Error(`the host did not start:\n${output}`)), 20_000);
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /approval page: (http:\/\/\S+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    };
    host.stdout?.on('data', collect);
    host.stderr?.on('data', collect);
    host.on('exit', () => reject(new Error(`the host exited:\n${output}`)));
  });
}

beforeAll(async () => {
  workspace = await mkdtemp(path.join(os.tmpdir(), 'stepwise-approval-host-'));
});

afterAll(async () => {
  if (host?.exitCode === null) {
    const exited = new Promise((resolve) => host?.once('exit', resolve));
    host.kill('SIGTERM');
    await exited;
  }
  await rm(workspace, { recursive: true, force: true });
});

describe.skipIf(!chromiumAvailable)('examples/approval-host in headless Chromium', () => {
  it('waiting runs are approved or denied from the page: the answer is journaled, the run resumes (and writes its file when approved)', async () => {
    const start = async () => {
      const started = await run(process.execPath, [path.join(example, 'start-run.mjs'), '--workspace', workspace]);
      return JSON.parse(started.stdout.trim().split('\n').at(-1) as string) as { runId: string; status: string };
    };
    const { runId, status } = await start();
    expect(status).toBe('waiting');
    // A second run waits too; it is denied from the page.
    const denied = await start();
    expect(denied.status).toBe('waiting');
    const notes = path.join(workspace, 'NOTES.md');
    expect(existsSync(notes)).toBe(false);

    const url = await serve();
    // A form on another site cannot answer for the person.
    const forged = await fetch(`${url}/respond`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ runId, requestId: 'anything', decision: 'approve' }),
    });
    expect(forged.status).toBe(403);

    await withChromiumPage({ width: 1200, height: 900 }, async (page) => {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(url);
      const requests = page.locator('li.request[data-step-id="publish"]');
      expect(await requests.count()).toBe(2);
      const request = requests.filter({ hasText: runId });
      // The planned contents are shown as text: the markup in them is not rendered.
      expect(await request.locator('pre.args').textContent()).toContain('<b>Approved</b>');
      expect(await request.locator('pre.args b').count()).toBe(0);
      expect(await page.locator(`#runs tr[data-run-id="${runId}"] .status`).textContent()).toBe('waiting');

      await Promise.all([page.waitForURL(url), request.locator('button[value="approve"]').click()]);
      expect(await page.locator('#notice').textContent()).toContain(`approve recorded for ${runId}`);
      await expect
        .poll(
          async () => {
            await page.goto(url);
            return page.locator(`#runs tr[data-run-id="${runId}"] .status`).textContent();
          },
          { timeout: 20_000 },
        )
        .toBe('completed');

      const other = page.locator('li.request[data-step-id="publish"]').filter({ hasText: denied.runId });
      await Promise.all([page.waitForURL(url), other.locator('button[value="deny"]').click()]);
      expect(await page.locator('#notice').textContent()).toContain(`deny recorded for ${denied.runId}`);
      await expect
        .poll(
          async () => {
            await page.goto(url);
            return page.locator(`#runs tr[data-run-id="${denied.runId}"] .status`).textContent();
          },
          { timeout: 20_000 },
        )
        .toBe('partial');
      expect(await page.locator('#pending-empty').count()).toBe(1);
      expect(errors).toEqual([]);
    });

    expect(readFileSync(notes, 'utf8')).toContain('<b>Approved</b> by a person over HTTP.');
    const store = createSqliteStore({ path: path.join(workspace, '.stepwise', 'stepwise.db') });
    try {
      const events = await readAll(store, runId);
      expect(events.find((event) => event.type === 'approval-response')).toMatchObject({
        decision: 'approve',
        by: 'web reviewer',
      });
      expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
      const deniedEvents = await readAll(store, denied.runId);
      expect(deniedEvents.find((event) => event.type === 'approval-decision')).toMatchObject({
        decision: 'denied',
        by: 'web reviewer',
      });
      // The denied run wrote nothing: only the approved run's tool call is in the journal.
      expect(deniedEvents.some((event) => event.type === 'tool-call' && event.tool === 'file_write')).toBe(false);
    } finally {
      await store.close();
    }
  }, 90_000);
});

if (!chromiumAvailable) console.warn(skipMessage('examples/approval-host test in Chromium'));
