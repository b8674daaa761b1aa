import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonLines, startCli, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

describe('resume', () => {
  it('continues a run after its process was killed with SIGKILL', async () => {
    await cli.resetCalls();
    await cli.write('slow.json', {
      id: 'slow',
      steps: [
        { id: 'quick', tool: 'sleep_ms', args: { ms: 1, label: 'quick' } },
        { id: 'slow', tool: 'sleep_ms', args: { ms: 3000, label: 'slow' }, dependsOn: ['quick'] },
        { id: 'after', tool: 'sleep_ms', args: { ms: 1, label: 'after' }, dependsOn: ['slow'] },
      ],
    });
    const child = startCli(['run', 'slow.json', '--json'], { cwd: cli.directory });
    const lines: Record<string, unknown>[] = [];
    await new Promise<void>((resolve, reject) => {
      let buffer = '';
      const timer = setTimeout(() => reject(new Error('the slow step never started')), 20_000);
      child.stdout?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        let newline = buffer.indexOf('\n');
        while (newline !== -1) {
          const event = JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>;
          lines.push(event);
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
          if (event.type === 'tool-call' && event.stepId === 'slow') {
            clearTimeout(timer);
            child.kill('SIGKILL');
            resolve();
          }
        }
      });
      child.on('exit', () => resolve());
    });
    const exit = await new Promise<NodeJS.Signals | null>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
      else child.on('exit', (_code, signal) => resolve(signal));
    });
    expect(exit).toBe('SIGKILL');
    const runId = lines[0]?.runId as string;
    expect(lines.some((event) => event.type === 'run-end')).toBe(false);
    expect(await cli.readCalls()).toEqual(['start quick', 'end quick', 'start slow']);

    const resumed = await cli.stepwise(['resume', runId, '--json'], { timeoutMs: 30_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseJsonLines(resumed.stdout);
    expect(events[0]).toMatchObject({ type: 'run-resume', interrupted: [{ stepId: 'slow', action: 'rerun' }] });
    expect(events[0]?.seq).toBe((lines.at(-1)?.seq as number) + 1);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    // The completed step did not run again; the interrupted idempotent one did, once.
    expect(await cli.readCalls()).toEqual([
      'start quick',
      'end quick',
      'start slow',
      'start slow',
      'end slow',
      'start after',
      'end after',
    ]);
    const shown = await cli.stepwise(['show', runId, '--json']);
    expect((JSON.parse(shown.stdout) as { run: { status: string } }).run.status).toBe('completed');
  }, 60_000);

  it('continues a failed run with --retry as the same run, keeping the failed attempt', async () => {
    await cli.resetCalls();
    const flag = path.join(cli.directory, 'retry-flag');
    await writeFile(path.join(cli.directory, 'gate.js'), "require('node:fs').statSync('retry-flag');\n");
    await cli.write('gate.json', {
      id: 'gate',
      steps: [
        { id: 'gate', tool: 'run_command', args: { command: ['node', 'gate.js'] } },
        { id: 'after', tool: 'sleep_ms', args: { ms: 1, label: 'after' }, dependsOn: ['gate'] },
      ],
    });
    const failed = await cli.stepwise(['run', 'gate.json', '--json', '--approve', 'auto']);
    expect(failed.code, failed.stdout).toBe(30);
    const runId = parseJsonLines(failed.stdout)[0]?.runId as string;

    const refused = await cli.stepwise(['resume', runId, '--json']);
    expect(refused.code).toBe(30);
    expect(refused.stderr).toContain('--retry STEP or --skip STEP');

    await writeFile(flag, 'ok');
    const resumed = await cli.stepwise([
      'resume',
      runId,
      '--retry',
      'gate',
      '--by',
      'ops',
      '--json',
      '--approve',
      'auto',
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseJsonLines(resumed.stdout);
    expect(events[0]).toMatchObject({ type: 'run-continue', from: 'failed', retry: ['gate'], by: 'ops' });
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'completed' });
    expect(await cli.readCalls()).toEqual(['start after', 'end after']);

    const shown = await cli.stepwise(['show', runId, '--json']);
    const run = JSON.parse(shown.stdout) as { run: { status: string } };
    expect(run.run.status).toBe('completed');
    const again = await cli.stepwise(['resume', runId, '--skip', 'gate']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('E004');
  }, 90_000);
});
