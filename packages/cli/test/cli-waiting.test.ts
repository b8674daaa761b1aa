import { describe, expect, it } from 'vitest';
import { parseJsonLines, useCliWorkspace } from './helpers.js';

const cli = useCliWorkspace();

describe('waiting for a person from the command line', () => {
  it('run --approve pause exits 35; pending lists the request; respond answers it once; resume completes', async () => {
    await cli.resetCalls();
    await cli.write('ask.json', {
      id: 'ask',
      steps: [
        { id: 'ask', tool: 'sleep_ms', args: { ms: 1, label: 'ask' }, requiresApproval: true },
        { id: 'after', tool: 'sleep_ms', args: { ms: 1, label: 'after' }, dependsOn: ['ask'] },
      ],
    });
    const waiting = await cli.stepwise(['run', 'ask.json', '--json', '--approve', 'pause']);
    expect(waiting.code, waiting.stderr).toBe(35);
    const runId = parseJsonLines(waiting.stdout)[0]?.runId as string;
    expect(parseJsonLines(waiting.stdout).at(-1)).toMatchObject({ type: 'run-end', status: 'waiting' });
    expect(await cli.readCalls()).toEqual([]);
    const shown = await cli.stepwise(['show', runId, '--json']);
    const steps = JSON.parse(shown.stdout).steps as {
      stepId: string;
      status: string;
      result?: { error?: { code: string } };
    }[];
    expect(steps.map((step) => [step.stepId, step.status, step.result?.error?.code])).toEqual([
      ['ask', 'waiting', 'E410'],
      ['after', 'skipped', 'E310'],
    ]);
    expect((await cli.stepwise(['show', runId])).stdout).toMatch(/ask\s+sleep_ms\s+waiting/);

    const pending = await cli.stepwise(['pending', '--json']);
    expect(pending.code, pending.stderr).toBe(0);
    const requests = JSON.parse(pending.stdout) as { runId: string; stepId: string; requestId: string }[];
    expect(requests.map((request) => [request.runId, request.stepId])).toEqual([[runId, 'ask']]);

    const usage = await cli.stepwise(['respond', runId, '--step', 'ask', '--approve', '--deny']);
    expect(usage.code).toBe(2);
    const answered = await cli.stepwise([
      'respond',
      runId,
      '--request',
      requests[0]?.requestId as string,
      '--approve',
      '--by',
      'alice',
    ]);
    expect(answered.code, answered.stderr).toBe(0);
    const twice = await cli.stepwise(['respond', runId, '--step', 'ask', '--deny', '--by', 'bob']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('E411');

    const resumed = await cli.stepwise(['resume', runId, '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseJsonLines(resumed.stdout);
    expect(events.find((event) => event.type === 'approval-decision')).toMatchObject({
      decision: 'approved',
      by: 'alice',
    });
    expect(await cli.readCalls()).toEqual(['start ask', 'end ask', 'start after', 'end after']);
    expect(JSON.parse((await cli.stepwise(['pending', '--json'])).stdout)).toEqual([]);
  }, 120_000);
});
