import { describe, expect, it } from 'vitest';
import { ErrorCodes, type StepError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { insertSteps } from './insert-steps.js';
import { RunRevisions } from './revise-run.js';
import { openTestSession } from './test-session.js';

const plan = makePlan([
  { id: 'setup', tool: 'echo' },
  { id: 'deploy', tool: 'echo', dependsOn: ['setup'] },
  { id: 'notify', tool: 'echo', dependsOn: ['deploy'] },
]);

const broken: StepError = { code: 'E304', message: 'exit 1', retryable: false };

async function open() {
  const { registry } = createTestTools();
  const session = await openTestSession(plan, { tools: registry });
  const { board, journal, control, loop, policy, result } = session;
  for (const slot of board.slots) loop.release(slot);
  loop.advance(board.slot(0), result('setup', 'succeeded'));
  const deploy = board.slot(1);
  deploy.attempt = 1;
  const revisions = new RunRevisions({ board, journal, control, policy, tools: registry, loop });
  return { session, revisions, deploy, failed: result('deploy', 'failed', { error: broken }) };
}

const decisionOf = async (events: Promise<RunEvent[]>) =>
  (await events).find(
    (event): event is Extract<RunEvent, { type: 'recovery-decision' }> => event.type === 'recovery-decision',
  );

describe('insertSteps', () => {
  it('to retry: adds the steps before the failed one, which now depends on them too', async () => {
    const { session, revisions, deploy, failed } = await open();
    const steps = [
      { id: 'login', tool: 'echo' },
      { id: 'migrate', tool: 'echo' },
    ];
    await expect(insertSteps(revisions, deploy, failed, { action: 'insert', steps })).resolves.toBe(true);
    const { board } = session;
    expect(board.plan.steps.map((step) => step.id)).toEqual(['setup', 'login', 'migrate', 'deploy', 'notify']);
    expect(board.byId('deploy')?.step.dependsOn).toEqual(['setup', 'login', 'migrate']);
    // The reopened step keeps its slot and counts the two inserted steps it now waits for.
    expect(board.byId('deploy')).toBe(deploy);
    expect(deploy.remaining).toBe(2);
    expect(await decisionOf(session.events())).toMatchObject({
      stepId: 'deploy',
      attempt: 1,
      decision: 'insert',
      steps,
      afterwards: 'retry',
    });
  });

  it('to skip: adds the steps before the failed one and leaves its dependencies alone', async () => {
    const { session, revisions, deploy, failed } = await open();
    const steps = [{ id: 'rollback', tool: 'echo' }];
    const decision = { action: 'insert' as const, steps, afterwards: 'skip' as const, reason: 'give up' };
    await expect(insertSteps(revisions, deploy, failed, decision)).resolves.toBe(true);
    expect(session.board.plan.steps.map((step) => step.id)).toEqual(['setup', 'rollback', 'deploy', 'notify']);
    expect(session.board.byId('deploy')?.step.dependsOn).toEqual(['setup']);
    expect(await decisionOf(session.events())).toMatchObject({ afterwards: 'skip', reason: 'give up' });
  });

  it('returns false and journals the error when the steps cannot go in (an id already taken)', async () => {
    const { session, revisions, deploy, failed } = await open();
    const steps = [{ id: 'notify', tool: 'echo' }];
    await expect(insertSteps(revisions, deploy, failed, { action: 'insert', steps })).resolves.toBe(false);
    expect(session.board.plan).toBe(plan);
    expect((await decisionOf(session.events()))?.error?.code).toBe(ErrorCodes.PLAN_INVALID);
  });
});
