import { describe, expect, it, vi } from 'vitest';
import { ErrorCodes } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { type AdjustScope, adjustAfterStep } from './adjust-run.js';
import type { AdjustHook } from './policies/adjust-hook.js';
import { RunRevisions } from './revise-run.js';
import { openTestSession } from './test-session.js';

const plan = makePlan([
  { id: 'draft', tool: 'echo' },
  { id: 'publish', tool: 'echo', dependsOn: ['draft'] },
]);

async function open(hook: AdjustHook) {
  const { registry } = createTestTools();
  const session = await openTestSession(plan, { tools: registry });
  const { board, journal, control, loop, policy, warn } = session;
  for (const slot of board.slots) loop.release(slot);
  const revisions = new RunRevisions({ board, journal, control, policy, tools: registry, loop });
  const scope: AdjustScope = { hook, board, journal, control, revisions, warn };
  return { session, scope, slot: board.slot(0) };
}

const decisions = async (events: Promise<RunEvent[]>) =>
  (await events).filter(
    (event): event is Extract<RunEvent, { type: 'adjust-decision' }> => event.type === 'adjust-decision',
  );

describe('adjustAfterStep', () => {
  it('asks the hook with the plan, the outputs and the started steps, and journals `continue`', async () => {
    const hook = vi.fn<AdjustHook>(() => undefined);
    const { session, scope, slot } = await open(hook);
    const ended = session.result('draft', 'succeeded', { output: { value: 'text' } });
    await expect(adjustAfterStep(scope, slot, ended)).resolves.toBe('continue');
    expect(hook).toHaveBeenCalledWith(
      plan.steps[0],
      ended,
      expect.objectContaining({ runId: session.journal.runId, plan, started: ['draft'] }),
    );
    expect(await decisions(session.events())).toMatchObject([
      { stepId: 'draft', attempt: 1, status: 'succeeded', decision: 'continue' },
    ]);
  });

  it('revises the pending steps and journals the decision before its plan-revise', async () => {
    const { session, scope, slot } = await open(() => ({
      action: 'revise',
      edits: [{ op: 'add', step: { id: 'review', tool: 'echo', dependsOn: ['draft'] }, before: 'publish' }],
      reason: 'needs a review',
    }));
    await expect(adjustAfterStep(scope, slot, session.result('draft', 'succeeded'))).resolves.toBe('revised');
    expect(session.board.plan.steps.map((step) => step.id)).toEqual(['draft', 'review', 'publish']);
    const types = (await session.events()).map((event) => event.type);
    expect(types.slice(-2)).toEqual(['adjust-decision', 'plan-revise']);
  });

  it('journals a refused revision with its error and goes on unrevised', async () => {
    const { session, scope, slot } = await open(() => ({
      action: 'revise',
      edits: [{ op: 'remove', stepId: 'draft' }],
    }));
    await expect(adjustAfterStep(scope, slot, session.result('draft', 'succeeded'))).resolves.toBe('continue');
    expect(session.board.plan).toBe(plan);
    expect((await decisions(session.events()))[0]?.error?.code).toBe(ErrorCodes.PLAN_REVISION_CONFLICT);
  });

  it('stops the run: cancelled after a success, failed after a failure', async () => {
    const stop: AdjustHook = () => ({ action: 'stop', reason: 'enough' });
    const afterSuccess = await open(stop);
    const succeeded = afterSuccess.session.result('draft', 'succeeded');
    await expect(adjustAfterStep(afterSuccess.scope, afterSuccess.slot, succeeded)).resolves.toBe('stopped');
    expect(afterSuccess.session.control.stopCause).toEqual({
      kind: 'cancelled',
      reason: 'the adjust hook stopped the run after step "draft" (enough)',
    });
    const afterFailure = await open(stop);
    const failed = afterFailure.session.result('draft', 'failed', {
      error: { code: 'E304', message: 'no', retryable: false },
    });
    await adjustAfterStep(afterFailure.scope, afterFailure.slot, failed);
    expect(afterFailure.session.control.stopCause?.kind).toBe('failed');
  });

  it('journals a hook that throws or answers nonsense as `continue` with E004, and logs the throw', async () => {
    const thrown = new Error('model unavailable');
    const throwing = await open(() => {
      throw thrown;
    });
    await expect(
      adjustAfterStep(throwing.scope, throwing.slot, throwing.session.result('draft', 'succeeded')),
    ).resolves.toBe('continue');
    expect(throwing.session.warnings.map((warning) => warning.error)).toEqual([thrown]);
    const nonsense = await open(() => ({ action: 'dance' }) as never);
    await adjustAfterStep(nonsense.scope, nonsense.slot, nonsense.session.result('draft', 'succeeded'));
    for (const session of [throwing.session, nonsense.session]) {
      expect(await decisions(session.events())).toMatchObject([
        { decision: 'continue', error: { code: ErrorCodes.INPUT_INVALID } },
      ]);
    }
  });

  it('keeps, but does not apply, a decision that arrives after the run stopped (E307)', async () => {
    let stopRun: () => void = () => undefined;
    const { session, scope, slot } = await open(() => {
      stopRun();
      return { action: 'revise', edits: [{ op: 'remove', stepId: 'publish' }] };
    });
    stopRun = () => session.control.stop('cancelled', 'the host cancelled');
    await expect(adjustAfterStep(scope, slot, session.result('draft', 'succeeded'))).resolves.toBe('continue');
    expect(session.board.plan).toBe(plan);
    expect(await decisions(session.events())).toMatchObject([
      { decision: 'revise', error: { code: ErrorCodes.STEP_CANCELLED } },
    ]);
  });
});
