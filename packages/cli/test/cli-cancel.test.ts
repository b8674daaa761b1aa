import { startThrowawayPostgres, type ThrowawayPostgres } from '@stepwise/store-postgres/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { type CliWorkspace, parseJsonLines, startCli, useCliWorkspace } from './helpers.js';

/** A script that prints a line a second until it is killed. */
const LONG_COMMAND = `setInterval(() => console.log('tick'), 1000);\n`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      // Blocked past the deadline, this process runs its timer before it reads the output that
      // arrived meanwhile: one more look once the event loop's I/O phase has run.
      await new Promise((resolve) => setImmediate(resolve));
      const last = probe();
      if (last !== undefined) return last;
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `stepwise run` of a long command in one process; `stepwise cancel` from another: the command's
 * process is killed, the run ends cancelled within a few seconds, and its run-end names who asked.
 */
async function cancelAcrossProcesses(cli: CliWorkspace): Promise<void> {
  await cli.write('long.js', LONG_COMMAND);
  await cli.write('long.json', {
    id: 'long',
    steps: [
      { id: 'long', tool: 'run_command', args: { command: ['node', 'long.js'] } },
      { id: 'after', tool: 'sleep_ms', args: { ms: 1, label: 'after' }, dependsOn: ['long'] },
    ],
  });
  const run = startCli(['run', 'long.json', '--json', '--approve', 'auto'], { cwd: cli.directory });
  let stdout = '';
  run.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => run.on('close', (code) => resolve(code)));
  try {
    // The process group run_command started (journaled as process-start): the sandbox's pid namespace
    // hides the command's own pid from it, so the group is the one to watch.
    const group = await until(
      () => {
        const started = parseJsonLines(stdout.slice(0, stdout.lastIndexOf('\n') + 1)).find(
          (event) => event.type === 'process-start',
        );
        return started && (stdout.includes('"tool-call"') ? (started.processGroup as number) : undefined);
      },
      30_000,
      'the command to start',
    );
    const runId = parseJsonLines(stdout.split('\n')[0] ?? '')[0]?.runId as string;
    expect(runId).toMatch(/^run_/);
    expect(alive(-group)).toBe(true);
    const asked = Date.now();
    const cancelled = await cli.stepwise([
      'cancel',
      runId,
      '--by',
      'alice',
      '--reason',
      'too slow',
      '--wait',
      '--json',
    ]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toEqual({ runId, outcome: 'requested', by: 'alice', status: 'cancelled' });
    // The lease is renewed every third of its 1 s TTL: the cancel arrives within a few renewals. The
    // bound also holds the `stepwise cancel` process's own start-up, seconds on a loaded machine
    // (5,048 ms against a 5 s bound once in a fresh-clone CI).
    expect(Date.now() - asked).toBeLessThan(15_000);
    expect(await exited).toBe(1);
    await until(() => (alive(-group) ? undefined : true), 5_000, "the command's process group to be gone");
    const events = parseJsonLines(stdout);
    expect(events.at(-1)).toMatchObject({ type: 'run-end', status: 'cancelled', by: 'alice', reason: 'too slow' });
    const longEnd = events.find((event) => event.type === 'step-end' && event.stepId === 'long');
    expect(longEnd).toMatchObject({ result: { status: 'cancelled', error: { code: 'E307' } } });
    expect(JSON.stringify(longEnd)).toContain('alice asked to cancel the run: too slow');
    // Nothing left to cancel: exit 2 with E508.
    const again = await cli.stepwise(['cancel', runId]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('E508');
  } finally {
    run.kill('SIGKILL');
  }
}

describe('stepwise cancel (SQLite file)', () => {
  const cli = useCliWorkspace();

  it(
    'cancels a stepwise run of another process: its command is killed, the journal names who asked',
    () => cancelAcrossProcesses(cli),
    90_000,
  );

  it('ends a waiting run no process holds; an unknown run is E505 (exit 2)', async () => {
    await cli.write('ask.json', {
      id: 'ask',
      steps: [{ id: 'ask', tool: 'sleep_ms', args: { ms: 1, label: 'ask' }, requiresApproval: true }],
    });
    const waiting = await cli.stepwise(['run', 'ask.json', '--json', '--approve', 'pause']);
    expect(waiting.code, waiting.stderr).toBe(35);
    const runId = parseJsonLines(waiting.stdout)[0]?.runId as string;
    const cancelled = await cli.stepwise(['cancel', runId, '--by', 'bob']);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain(`run ${runId} cancelled (no process held it)`);
    expect(JSON.parse((await cli.stepwise(['pending', '--json'])).stdout)).toEqual([]);
    const shown = JSON.parse((await cli.stepwise(['show', runId, '--json'])).stdout) as { run: { status: string } };
    expect(shown.run.status).toBe('cancelled');
    const unknown = await cli.stepwise(['cancel', 'run_nothing_here']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('E505');
  }, 90_000);
});

let server: ThrowawayPostgres | undefined;
let skipReason = '';
try {
  server = await startThrowawayPostgres();
} catch (error) {
  skipReason = (error as Error).message;
}

describe.skipIf(!server)(`stepwise cancel (Postgres)${skipReason ? `: ${skipReason}` : ''}`, () => {
  const cli = useCliWorkspace({ store: { kind: 'postgres', url: server?.url, schema: 'cli_cancel' } });
  afterAll(() => server?.close());

  it('cancels a stepwise run of another process through a Postgres store', () => cancelAcrossProcesses(cli), 90_000);
});
