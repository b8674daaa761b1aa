import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from './dashboard-harness.js';

const SERVE = fileURLToPath(new URL('../../../examples/dashboard-host/serve.mjs', import.meta.url));

describe('examples/dashboard-host', () => {
  let workspace = '';
  afterAll(async () => {
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it("mounts the dashboard beside the host's own route; an approval there finishes the host's run", async () => {
    workspace = await mkdtemp(path.join(os.tmpdir(), 'stepwise-dashboard-host-'));
    const child = spawn(process.execPath, [SERVE, '--workspace', workspace, '--port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('close', (code) => reject(new Error(`serve.mjs exited with ${code}`)));
      });
      const { host, dashboard, runId, status } = JSON.parse(line) as Record<string, string>;
      expect(status).toBe('waiting');
      expect(await (await fetch(host as string)).text()).toContain('Release desk');
      const page = await fetch(`${dashboard}runs/${runId}`);
      const html = await page.text();
      expect(html).toContain('Publish the release notes');
      const view = (await (await fetch(`${dashboard}api/runs/${runId}`)).json()) as {
        actions: { pending: { requestId: string; args: { text: string } }[] };
      };
      expect(view.actions.pending.map((request) => request.args.text)).toEqual(['Version 1.2 is out.']);
      const answered = await fetch(`${dashboard}api/runs/${runId}/actions`, {
        method: 'POST',
        headers: {
          cookie: (page.headers.get('set-cookie') ?? '').split(';')[0] as string,
          'x-stepwise-token': /name="stepwise-token" content="([^"]+)"/.exec(html)?.[1] as string,
          origin: new URL(host as string).origin,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ kind: 'respond', requestId: view.actions.pending[0]?.requestId, decision: 'approve' }),
      });
      expect(answered.status).toBe(200);
      await eventually(async () => {
        const now = (await (await fetch(`${dashboard}api/runs/${runId}`)).json()) as { status: string };
        return now.status === 'completed';
      });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
