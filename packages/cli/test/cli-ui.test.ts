import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { parseJsonLines, startCli, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

/** The session a page of the dashboard hands out: its cookie and its anti-forgery token. */
async function session(url: string): Promise<{ cookie: string; token: string }> {
  const page = await fetch(url);
  const html = await page.text();
  return {
    cookie: (page.headers.get('set-cookie') ?? '').split(';')[0] as string,
    token: /name="stepwise-token" content="([^"]+)"/.exec(html)?.[1] as string,
  };
}

describe('stepwise ui', () => {
  it('serves the journal on 127.0.0.1; an approval from the dashboard resumes the run with the configured tools', async () => {
    await cli.resetCalls();
    await cli.write('ship.json', {
      id: 'ship',
      goal: 'Ship to staging',
      steps: [{ id: 'deploy', tool: 'deploy', args: { target: 'staging' }, requiresApproval: true }],
    });
    const waiting = await cli.stepwise(['run', 'ship.json', '--json', '--approve', 'pause']);
    expect(waiting.code, waiting.stderr).toBe(35);
    const runId = parseJsonLines(waiting.stdout)[0]?.runId as string;

    const ui = startCli(['ui', '--port', '0'], { cwd: cli.directory, env: { USER: 'dana' } });
    let stderr = '';
    ui.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => ui.on('close', resolve));
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: ui.stdout as NodeJS.ReadableStream }).once('line', resolve);
        ui.once('close', () => reject(new Error(`stepwise ui exited: ${stderr}`)));
      });
      const url = /^Stepwise dashboard: (http:\/\/127\.0\.0\.1:\d+\/)$/.exec(line)?.[1] as string;
      expect(url, line).toBeDefined();

      const list = (await (await fetch(`${url}api/runs`)).json()) as { runs: { runId: string; waitingOn: string[] }[] };
      expect(list.runs.map((run) => [run.runId, run.waitingOn])).toEqual([
        [runId, ['approval of deploy (exec) at deploy']],
      ]);
      const view = (await (await fetch(`${url}api/runs/${runId}`)).json()) as {
        actions: { pending: { requestId: string }[] };
      };
      const { cookie, token } = await session(`${url}runs/${runId}`);
      const approved = await fetch(`${url}api/runs/${runId}/actions`, {
        method: 'POST',
        headers: { cookie, 'x-stepwise-token': token, origin: new URL(url).origin, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'respond', requestId: view.actions.pending[0]?.requestId, decision: 'approve' }),
      });
      expect(await approved.json()).toEqual({ ok: true, message: 'approve journaled; the run goes on' });
      let status = '';
      for (let tries = 0; tries < 200 && status !== 'completed'; tries++) {
        status = ((await (await fetch(`${url}api/runs/${runId}`)).json()) as { status: string }).status;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(status).toBe('completed');
      expect(await cli.readCalls()).toEqual(['deploy staging']);
      const shown = await cli.stepwise(['show', runId, '--json']);
      expect(shown.stdout).toContain('"by": "dana"');
    } finally {
      ui.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toContain('stepwise ui: SIGTERM, stopping');
  });

  it('refuses a port that is not a number (usage, exit 2)', async () => {
    const outcome = await cli.stepwise(['ui', '--port', 'eighty']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('--port must be a positive integer');
  });
});
