import { describe, expect, it } from 'vitest';
import { ErrorCodes, type StepError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import type { Plan } from '../plan/plan-schema.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { AttemptGate } from './attempt-gate.js';
import type { EnginePolicy } from './engine-policy.js';
import { FailurePolicy } from './failure-policy.js';
import { restoreSession } from './restore-session.js';
import type { RestoredStep } from './resume-state.js';
import { RunRevisions } from './revise-run.js';
import { openTestSession, type TestSession, testPolicy } from './test-session.js';

const plan = makePlan([
  { id: 'fetch', tool: 'echo' },
  { id: 'parse', tool: 'echo', dependsOn: ['fetch'] },
  { id: 'upload', tool: 'note' },
  { id: 'index', tool: 'echo' },
]);

const broken: StepError = { code: 'E304', message: 'exit 1', retryable: false };

/** Restores `steps` into a fresh session of `plan`, the way a resume does. */
async function restore(
  steps: Record<string, RestoredStep>,
  of: Plan = plan,
  overrides: Partial<EnginePolicy> = {},
): Promise<TestSession> {
  const { registry } = createTestTools();
  const session = await openTestSession(of, { tools: registry, policy: testPolicy(overrides) });
  const { board, journal, control, observer, policy, loop, warn } = session;
  const gate = new AttemptGate({ board, journal, control, observer, policy, loop });
  const revisions = new RunRevisions({ board, journal, control, policy, tools: registry, loop });
  const failures = new FailurePolicy({
    policy,
    board,
    journal,
    control,
    gate,
    loop,
    revisions,
    adjust: undefined,
    warn,
  });
  control.beginWork();
  restoreSession(
    { board, journal, control, policy, loop, failures, resumed: undefined },
    new Map(Object.entries(steps)),
  );
  control.endWork();
  return session;
}

const fresh: RestoredStep = { attempt: 0, args: undefined };
const stepEnds = async (session: TestSession) =>
  (await session.events()).filter(
    (event): event is Extract<RunEvent, { type: 'step-end' }> => event.type === 'step-end',
  );

describe('restoreSession', () => {
  it('keeps ended steps and their outputs, and releases the rest from where the journal left them', async () => {
    const session = await restore({
      fetch: { attempt: 1, args: undefined, result: endedResult('fetch', 'succeeded', { value: 'page' }) },
      parse: fresh,
      upload: fresh,
      index: fresh,
    });
    const { board, started } = session;
    expect(board.byId('fetch')?.status).toBe('succeeded');
    expect(board.done).toBe(1);
    expect(board.outputs.get('fetch')).toEqual({ value: 'page' });
    expect(started).toEqual([
      { stepId: 'parse', attempt: 1 },
      { stepId: 'upload', attempt: 1 },
      { stepId: 'index', attempt: 1 },
    ]);
    expect(await stepEnds(session)).toEqual([]);
  });

  it('starts an interrupted step again as its next attempt, and a retry once the steps inserted before it succeed', async () => {
    const withInsert = makePlan([
      { id: 'login', tool: 'echo' },
      { id: 'fetch', tool: 'echo', dependsOn: ['login'] },
      { id: 'index', tool: 'echo' },
    ]);
    const session = await restore(
      {
        login: fresh,
        fetch: { attempt: 1, args: { value: 'again' }, action: 'retry' },
        index: { attempt: 2, args: undefined, action: 'rerun', executionId: 'ex_index_2' },
      },
      withInsert,
    );
    expect(session.started).toEqual([
      { stepId: 'index', attempt: 3 },
      { stepId: 'login', attempt: 1 },
    ]);
    expect(session.board.byId('fetch')?.status).toBe('blocked');
    expect(session.board.byId('fetch')?.args).toEqual({ value: 'again' });
  });

  it('continues a goal step attempt in place of starting a new one', async () => {
    const goals = makePlan([{ id: 'solve' }]);
    const session = await restore(
      { solve: { attempt: 2, args: undefined, action: 'rerun', continueAttempt: true } },
      goals,
    );
    expect(session.started).toEqual([{ stepId: 'solve', attempt: 2 }]);
    expect(session.board.byId('solve')?.resumeAttempt).toBe(true);
  });

  it('finishes a step from its journaled tool result, and fails a non-idempotent one as interrupted (E309)', async () => {
    const session = await restore({
      fetch: {
        attempt: 1,
        args: undefined,
        action: 'finish',
        executionId: 'ex_fetch_1',
        startedAt: new Date(0).toISOString(),
        toolResult: { status: 'succeeded', output: { value: 'page' } } as RestoredStep['toolResult'],
      },
      parse: fresh,
      upload: { attempt: 1, args: undefined, action: 'fail', executionId: 'ex_upload_1' },
      index: fresh,
    });
    await session.control.idle;
    const ends = await stepEnds(session);
    expect(ends.map((event) => [event.stepId, event.result.status, event.result.error?.code])).toEqual([
      ['fetch', 'succeeded', undefined],
      ['upload', 'failed', ErrorCodes.STEP_INTERRUPTED],
    ]);
    expect(session.board.outputs.get('fetch')).toEqual({ value: 'page' });
    // The failed critical step stops the run through the failure policy; `parse` had already been queued.
    expect(session.control.stopCause).toEqual({ kind: 'failed', reason: 'critical step "upload" failed' });
    expect(session.started.map((entry) => entry.stepId)).toEqual(['index', 'parse']);
  });

  it('ends a step a person chose to skip, keeping its error, and lets its dependents run', async () => {
    const failure = endedResult('fetch', 'failed', undefined, broken);
    const session = await restore({
      fetch: { attempt: 1, args: undefined, action: 'skip', failure, by: 'person', reason: 'mirror is down' },
      parse: fresh,
      upload: fresh,
      index: fresh,
    });
    await session.control.idle;
    const [end] = await stepEnds(session);
    expect(end?.result).toMatchObject({
      status: 'skipped',
      error: { message: 'skipped by a person (mirror is down): exit 1', details: { skippedBy: 'person' } },
    });
    expect(session.started.map((entry) => entry.stepId)).toContain('parse');
  });

  it('carries on the stop the previous session had begun, and releases nothing', async () => {
    const cancelled = await restore({
      fetch: { attempt: 1, args: undefined, result: endedResult('fetch', 'cancelled') },
      parse: fresh,
      upload: fresh,
      index: fresh,
    });
    expect(cancelled.control.stopCause).toEqual({
      kind: 'cancelled',
      reason: 'the run was being cancelled when it stopped',
    });
    expect(cancelled.started).toEqual([]);
    // Under `stopOn: any` (the strict engine) a step that waits for a person stops the run `waiting`.
    const waiting = await restore(
      {
        fetch: { attempt: 1, args: undefined, result: endedResult('fetch', 'waiting') },
        parse: fresh,
        upload: fresh,
        index: fresh,
      },
      plan,
      { stopOn: 'any' },
    );
    expect(waiting.control.stopCause).toEqual({ kind: 'waiting', reason: 'step "fetch" waits for a person' });
    const aborted = await restore({
      fetch: fresh,
      parse: fresh,
      upload: fresh,
      index: { attempt: 1, args: undefined, result: endedResult('index', 'failed', undefined, broken), aborted: true },
    });
    expect(aborted.control.stopCause).toEqual({ kind: 'failed', reason: 'step "index" failed before the resume' });
  });

  it('skips the dependents of a step that ended blocking them', async () => {
    const session = await restore({
      fetch: { attempt: 1, args: undefined, result: endedResult('fetch', 'denied') },
      parse: fresh,
      upload: fresh,
      index: fresh,
    });
    expect(session.control.stopped).toBe(false);
    expect((await stepEnds(session)).map((event) => [event.stepId, event.result.error?.code])).toEqual([
      ['parse', ErrorCodes.DEPENDENCY_FAILED],
    ]);
  });
});

function endedResult(
  stepId: string,
  status: 'succeeded' | 'failed' | 'cancelled' | 'waiting' | 'denied',
  output?: unknown,
  error?: StepError,
) {
  return {
    stepId,
    tool: 'echo',
    status,
    executionId: `ex_${stepId}_1`,
    attempt: 1,
    startedAt: new Date(0).toISOString(),
    durationMs: 1,
    ...(output === undefined ? {} : { output }),
    ...(error ? { error } : {}),
  };
}
