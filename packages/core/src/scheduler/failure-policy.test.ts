import { describe, expect, it, vi } from 'vitest';
import { ErrorCodes, type StepError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { AttemptGate } from './attempt-gate.js';
import type { EnginePolicy, RecoveryHook } from './engine-policy.js';
import { FailurePolicy, stopsRun } from './failure-policy.js';
import { RunRevisions } from './revise-run.js';
import { openTestSession, type TestSession, testPolicy } from './test-session.js';

const plan = makePlan([
  { id: 'build', tool: 'echo' },
  { id: 'test', tool: 'echo', dependsOn: ['build'] },
  { id: 'lint', tool: 'echo', critical: false },
  { id: 'report', tool: 'echo', dependsOn: ['lint'] },
]);

const broken: StepError = { code: 'E304', message: 'exit 1', retryable: false };
const flaky: StepError = { code: 'E301', message: 'timeout', retryable: true };

async function open(policy: Partial<EnginePolicy> = {}) {
  const { registry } = createTestTools();
  const session = await openTestSession(plan, { policy: testPolicy(policy), tools: registry });
  for (const slot of session.board.slots) session.loop.release(slot);
  session.started.length = 0;
  return { session, failures: failuresFor(session) };
}

function failuresFor(session: TestSession): FailurePolicy {
  const { board, journal, control, observer, policy, loop, tools, warn } = session;
  const gate = new AttemptGate({ board, journal, control, observer, policy, loop });
  const revisions = new RunRevisions({ board, journal, control, policy, tools, loop });
  return new FailurePolicy({ policy, board, journal, control, gate, loop, revisions, adjust: undefined, warn });
}

const ofType =
  <T extends RunEvent['type']>(type: T) =>
  (event: RunEvent): event is Extract<RunEvent, { type: T }> =>
    event.type === type;

describe('stopsRun', () => {
  it('stops on any unsuccessful step under stopOn any, and only on critical failures otherwise', async () => {
    const { session } = await open();
    const [build, , lint] = session.board.slots as [never, never, never];
    const denied = session.result('build', 'denied');
    const failed = session.result('build', 'failed', { error: broken });
    expect(stopsRun({ stopOn: 'any' }, build, denied)).toBe(true);
    expect(stopsRun({ stopOn: 'critical' }, build, denied)).toBe(false);
    expect(stopsRun({ stopOn: 'critical' }, build, failed)).toBe(true);
    expect(stopsRun({ stopOn: 'critical' }, lint, session.result('lint', 'failed', { error: broken }))).toBe(false);
  });
});

describe('FailurePolicy.isFinal', () => {
  it('is final for a success, under stopOn any, and when no retry is left; not while a retry or a hook may act', async () => {
    const { session, failures } = await open({ retry: { maxAttempts: 2 } });
    const slot = session.board.slot(0);
    expect(failures.isFinal(slot, session.result('build', 'succeeded'))).toBe(true);
    expect(failures.isFinal(slot, session.result('build', 'failed', { error: broken }))).toBe(true);
    expect(failures.isFinal(slot, session.result('build', 'failed', { error: flaky }))).toBe(false);
    expect(failures.isFinal(slot, session.result('build', 'failed', { error: flaky, attempt: 2 }))).toBe(true);
    const strict = await open({ stopOn: 'any' });
    expect(strict.failures.isFinal(slot, session.result('build', 'failed', { error: flaky }))).toBe(true);
    const hooked = await open({ onStepFailed: () => undefined });
    expect(hooked.failures.isFinal(slot, session.result('build', 'failed', { error: broken }))).toBe(false);
  });
});

describe('FailurePolicy.recover', () => {
  it('stops the run on a critical failure before its dependents are journaled', async () => {
    const { session, failures } = await open();
    await failures.recover(session.board.slot(0), session.result('build', 'failed', { error: broken }));
    expect(session.control.stopCause).toEqual({ kind: 'failed', reason: 'critical step "build" failed' });
    expect(session.board.slot(0).result?.status).toBe('failed');
    expect(session.board.slot(1).result).toBeUndefined();
  });

  it('skips the dependents of a non-critical failure and lets the run go on', async () => {
    const { session, failures } = await open();
    await failures.recover(session.board.slot(2), session.result('lint', 'failed', { error: broken }));
    expect(session.control.stopped).toBe(false);
    expect(session.board.slot(3).result?.error?.code).toBe(ErrorCodes.DEPENDENCY_FAILED);
  });

  it('carries out the recovery hook: retry with new args journals the decision and queues the next attempt', async () => {
    const hook = vi.fn<RecoveryHook>(() => ({ action: 'retry', args: { value: 'fixed' }, reason: 'try again' }));
    const { session, failures } = await open({ onStepFailed: hook });
    const slot = session.board.slot(0);
    await failures.recover(slot, session.result('build', 'failed', { error: broken }));
    expect(hook).toHaveBeenCalledWith(plan.steps[0], broken, expect.objectContaining({ attempt: 1, recoveries: 0 }));
    expect(session.started).toEqual([{ stepId: 'build', attempt: 2 }]);
    expect(slot.args).toEqual({ value: 'fixed' });
    expect(slot.recoveries).toBe(1);
    const decision = (await session.events()).find(ofType('recovery-decision'));
    expect(decision).toMatchObject({ stepId: 'build', attempt: 1, decision: 'retry', args: { value: 'fixed' } });
  });

  it("carries out the hook's skip: the step ends skipped, keeps its error, and its dependents run", async () => {
    const { session, failures } = await open({ onStepFailed: () => ({ action: 'skip', reason: 'optional' }) });
    await failures.recover(session.board.slot(0), session.result('build', 'failed', { error: broken }));
    const end = (await session.events()).find(ofType('step-end'));
    expect(end?.result).toMatchObject({
      status: 'skipped',
      error: {
        code: 'E304',
        message: 'skipped by the recovery hook (optional): exit 1',
        details: { recovery: 'skip' },
      },
    });
    expect(session.started).toEqual([{ stepId: 'test', attempt: 1 }]);
  });

  it("carries out the hook's abort: the run fails at that step", async () => {
    const { session, failures } = await open({ onStepFailed: () => ({ action: 'abort' }) });
    await failures.recover(session.board.slot(2), session.result('lint', 'failed', { error: broken }));
    expect(session.control.stopCause).toEqual({
      kind: 'failed',
      reason: 'the recovery hook aborted the run at step "lint"',
    });
    expect(session.board.slot(2).result?.status).toBe('failed');
  });

  it('applies the default policy when the hook throws, and logs it', async () => {
    const thrown = new Error('the model is down');
    const { session, failures } = await open({
      onStepFailed: () => {
        throw thrown;
      },
    });
    await failures.recover(session.board.slot(0), session.result('build', 'failed', { error: broken }));
    expect(session.warnings).toEqual([{ message: 'recovery hook failed for step "build"', error: thrown }]);
    expect(session.control.stopCause?.reason).toBe('critical step "build" failed');
  });

  it('stops asking a hook that keeps retrying at the attempt cap', async () => {
    const hook = vi.fn<RecoveryHook>(() => ({ action: 'retry' }));
    const { session, failures } = await open({ onStepFailed: hook });
    await failures.recover(session.board.slot(0), session.result('build', 'failed', { error: broken, attempt: 100 }));
    expect(hook).not.toHaveBeenCalled();
    expect(session.control.stopped).toBe(true);
  });

  it("carries out the hook's insert: the steps go in before the failed one, which waits for them", async () => {
    const inserted = { id: 'clean', tool: 'echo' };
    const { session, failures } = await open({ onStepFailed: () => ({ action: 'insert', steps: [inserted] }) });
    await failures.recover(session.board.slot(0), session.result('build', 'failed', { error: broken }));
    const { board } = session;
    expect(board.plan.steps.map((step) => step.id)).toEqual(['clean', 'build', 'test', 'lint', 'report']);
    expect(board.byId('build')?.step.dependsOn).toEqual(['clean']);
    expect(board.byId('build')?.status).toBe('blocked');
    expect(board.byId('build')?.recoveries).toBe(1);
    expect(session.started).toEqual([{ stepId: 'clean', attempt: 1 }]);
    const types = (await session.events()).map((event) => event.type);
    expect(types.slice(-2)).toEqual(['recovery-decision', 'plan-revise']);
  });

  it('applies the default policy when an insert is refused, and journals why', async () => {
    const taken = { id: 'test', tool: 'echo' };
    const { session, failures } = await open({ onStepFailed: () => ({ action: 'insert', steps: [taken] }) });
    await failures.recover(session.board.slot(0), session.result('build', 'failed', { error: broken }));
    const decision = (await session.events()).find(ofType('recovery-decision'));
    expect(decision?.error?.code).toBe(ErrorCodes.PLAN_INVALID);
    expect(session.board.plan).toBe(plan);
    expect(session.control.stopCause?.reason).toBe('step "build" failed');
  });
});
