import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ErrorCodes, pendingApprovals, type RunEvent, readAll, respond } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const host = join(here, 'fixtures', 'waiting-host.mjs');
const ready = existsSync(join(here, '..', 'dist', 'index.js'));
const run = promisify(execFile);
const directory = mkdtempSync(join(tmpdir(), 'stepwise-waiting-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let database: string;
let sideFile: string;
let runId: string;
let count = 0;
beforeEach(() => {
  count++;
  database = join(directory, `runs-${count}.db`);
  sideFile = join(directory, `side-${count}.log`);
  runId = `run_waiting_${count}`;
});

// biome-ignore lint/suspicious/noExplicitAny: JSON a child process printed, read field by field
type Printed = Record<string, any>;

/** Runs one host process to its end and returns the JSON line it printed. */
async function hostProcess(...args: string[]): Promise<Printed> {
  const output = await run(process.execPath, [host, args[0] as string, database, runId, ...args.slice(1)]).catch(
    (error: { stdout: string }) => error,
  );
  return JSON.parse(output.stdout.trim().split('\n').at(-1) as string);
}

const invoked = () =>
  existsSync(sideFile)
    ? readFileSync(sideFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ')[0])
    : [];

const statusOf = (result: Printed, stepId: string) =>
  (result.steps as { stepId: string; status: string }[]).find((step) => step.stepId === stepId)?.status;

describe.skipIf(!ready)('waiting for a person', () => {
  it('run → waiting → the process exits → another process answers → a third resumes and completes', async () => {
    const waiting = await hostProcess('run', sideFile);
    expect(waiting.status).toBe('waiting');
    expect(statusOf(waiting, 'deploy')).toBe('waiting');
    expect(waiting.steps.find((step: { stepId: string }) => step.stepId === 'deploy').error.code).toBe(
      ErrorCodes.APPROVAL_WAITING,
    );
    // Nothing of the waiting step ran; the independent step did.
    expect(invoked().sort()).toEqual(['aside', 'prepare']);

    const store = createSqliteStore({ path: database });
    const pending = await pendingApprovals(store, runId);
    expect(
      pending.map((request) => [
        request.kind,
        request.stepId,
        request.kind === 'approval' && request.tool,
        request.kind === 'approval' && request.reason,
      ]),
    ).toEqual([['approval', 'deploy', 'mark', 'step']]);
    store.close();

    const answered = await hostProcess('respond', 'deploy', 'approve');
    expect(answered).toMatchObject({ type: 'approval-response', stepId: 'deploy', decision: 'approve' });
    expect(answered.requestId).toBe(pending[0]?.requestId);
    const again = await hostProcess('respond', 'deploy', 'deny');
    expect(again.error).toMatchObject({ code: ErrorCodes.ANSWER_REFUSED, details: { reason: 'answered' } });

    const completed = await hostProcess('resume', sideFile);
    expect(completed.status).toBe('completed');
    expect(completed.runId).toBe(runId);
    expect(invoked().sort()).toEqual(['after', 'aside', 'deploy', 'prepare']);

    const reader = createSqliteStore({ path: database });
    const events = await readAll(reader, runId);
    const approvalEvents = events
      .filter(
        (event) => event.type.startsWith('approval-') || event.type === 'run-end' || event.type === 'run-continue',
      )
      .map((event) => event.type);
    expect(approvalEvents).toEqual([
      'approval-request',
      'run-end',
      'approval-response',
      'run-continue',
      'approval-request',
      'approval-decision',
      'run-end',
    ]);
    const decision = events.find((event) => event.type === 'approval-decision') as Extract<
      RunEvent,
      { type: 'approval-decision' }
    >;
    expect(decision).toMatchObject({ decision: 'approved', source: 'handler', reason: 'checked' });
    expect(decision.by).toBe(answered.by);
    expect(await pendingApprovals(reader, runId)).toEqual([]);
    reader.close();
  }, 60_000);

  it('deny, skip and edit each continue as documented', async () => {
    const outcomes: Record<string, Printed> = {};
    for (const [decision, args] of [
      ['deny', undefined],
      ['skip', undefined],
      ['edit', JSON.stringify({ ms: 1, value: 'v2' })],
    ] as const) {
      runId = `run_${decision}_${count}`;
      expect((await hostProcess('run', sideFile)).status).toBe('waiting');
      await hostProcess('respond', 'deploy', decision, ...(args ? [args] : []));
      outcomes[decision] = await hostProcess('resume', sideFile);
    }
    const { deny, skip, edit } = outcomes as Record<string, Printed>;
    expect(statusOf(deny!, 'deploy')).toBe('denied');
    expect(statusOf(deny!, 'after')).toBe('skipped');
    expect(deny!.status).toBe('partial');
    expect(statusOf(skip!, 'deploy')).toBe('skipped');
    // `after` reads deploy's output, which a skipped step has not: skipped too (E310).
    expect(statusOf(skip!, 'after')).toBe('skipped');
    expect(edit!.status).toBe('completed');
    const after = edit!.steps.find((step: { stepId: string }) => step.stepId === 'after');
    expect(after.output).toMatchObject({ value: 'v2' });
  }, 120_000);

  it('refuses unknown, stale and early answers with E411, and of two racing answers exactly one wins', async () => {
    const store = createSqliteStore({ path: database });
    const refusal = (answer: Parameters<typeof respond>[2]) =>
      respond(store, runId, answer).then(
        () => undefined,
        (error: { code: string; details?: { reason?: string } }) => [error.code, error.details?.reason],
      );
    expect((await hostProcess('run', sideFile)).status).toBe('waiting');
    expect(await refusal({ requestId: 'nope', decision: 'approve', by: 'x' })).toEqual(['E411', 'unknown']);
    expect(await refusal({ stepId: 'prepare', decision: 'approve', by: 'x' })).toEqual(['E411', 'unknown']);
    expect(await refusal({ stepId: 'deploy', decision: 'edit', by: 'x' })).toEqual(['E004', undefined]);

    const racers = await Promise.all([
      hostProcess('respond', 'deploy', 'approve'),
      hostProcess('respond', 'deploy', 'deny'),
    ]);
    const winners = racers.filter((outcome) => outcome.type === 'approval-response');
    expect(winners).toHaveLength(1);
    const loser = racers.find((outcome) => outcome.error);
    expect([ErrorCodes.ANSWER_REFUSED, ErrorCodes.LEASE_CONFLICT]).toContain(loser?.error.code);
    const responses = (await readAll(store, runId)).filter((event) => event.type === 'approval-response');
    expect(responses).toHaveLength(1);

    const completed = await hostProcess('resume', sideFile);
    expect(completed.status).toBe(winners[0]?.decision === 'approve' ? 'completed' : 'partial');
    // The request was answered and applied: a late answer to it is stale now, the run is not waiting.
    expect(await refusal({ requestId: winners[0]?.requestId, decision: 'approve', by: 'x' })).toEqual([
      'E411',
      'not-waiting',
    ]);
    store.close();
  }, 60_000);
});
