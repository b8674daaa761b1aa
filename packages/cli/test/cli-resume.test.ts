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
});
