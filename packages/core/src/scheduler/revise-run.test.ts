import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { approvePlan } from '../plan/plan-digest.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import type { EnginePolicy } from './engine-policy.js';
import { RunRevisions } from './revise-run.js';
import { openTestSession, testPolicy } from './test-session.js';

const plan = makePlan([
  { id: 'fetch', tool: 'echo' },
  { id: 'parse', tool: 'echo', dependsOn: ['fetch'] },
  { id: 'store', tool: 'echo', dependsOn: ['parse'] },
]);

async function open(policy: Partial<EnginePolicy> = {}) {
  const { registry } = createTestTools();
  const session = await openTestSession(plan, { policy: testPolicy(policy), tools: registry });
  const { board, journal, control, loop } = session;
  // As `execute` does: the session is not idle while it places its steps.
  control.beginWork();
  for (const slot of board.slots) loop.release(slot);
  const revisions = new RunRevisions({ board, journal, control, policy: session.policy, tools: registry, loop });
  return { session, revisions };
}

async function codeOf(work: () => unknown): Promise<string | undefined> {
  try {
    await work();
  } catch (error) {
    return StepwiseError.isInstance(error) ? error.code : 'not a StepwiseError';
  }
  return undefined;
}

const planRevisions = (events: RunEvent[]) => events.filter((event) => event.type === 'plan-revise');

describe('RunRevisions.prepare', () => {
  it('refuses to touch a started step (E005) and an invalid plan (E001), journaling nothing', async () => {
    const { session, revisions } = await open();
    expect(session.started.map((entry) => entry.stepId)).toEqual(['fetch']);
    expect(await codeOf(() => revisions.prepare({ edits: [{ op: 'remove', stepId: 'fetch' }] }))).toBe(
      ErrorCodes.PLAN_REVISION_CONFLICT,
    );
    const ghost = { op: 'edit' as const, stepId: 'store', changes: { dependsOn: ['ghost'] } };
    expect(await codeOf(() => revisions.prepare({ edits: [ghost] }))).toBe(ErrorCodes.PLAN_INVALID);
    expect(await codeOf(() => revisions.prepare({ edits: [], remaining: [] }))).toBe(ErrorCodes.INPUT_INVALID);
    expect(planRevisions(await session.events())).toEqual([]);
    expect(session.board.plan).toBe(plan);
  });
});

describe('RunRevisions.commit', () => {
  it('journals plan-revise, moves the board to the new plan and queues the fresh steps', async () => {
    const { session, revisions } = await open();
    const before = revisions.planDigest;
    const prepared = revisions.prepare({
      edits: [{ op: 'add', step: { id: 'check', tool: 'echo' } }],
      by: 'alice',
      reason: 'one more check',
    });
    const revision = await revisions.commit(prepared);
    expect(session.board.plan.steps.map((step) => step.id)).toEqual(['fetch', 'parse', 'store', 'check']);
    expect(revisions.planDigest).toBe(revision.digest);
    expect(revisions.planDigest).not.toBe(before);
    expect(revisions.events).toHaveLength(1);
    expect(session.started.map((entry) => entry.stepId)).toEqual(['fetch', 'check']);
    expect(session.board.byId('parse')?.status).toBe('blocked');
    expect(planRevisions(await session.events())).toMatchObject([{ by: 'alice', reason: 'one more check' }]);
  });

  it('holds the run on an unapproved revision under `wait`, fails it under `fail`, and lets an approved one run', async () => {
    const edits = [{ op: 'add' as const, step: { id: 'check', tool: 'echo' } }];
    const waiting = await open({ revisionApproval: 'wait' });
    await waiting.revisions.commit(waiting.revisions.prepare({ edits }));
    expect(waiting.session.control.held).toBe(true);
    expect(waiting.session.control.stopped).toBe(false);
    const failing = await open({ revisionApproval: 'fail' });
    await failing.revisions.commit(failing.revisions.prepare({ edits }));
    expect(failing.session.control.stopCause?.kind).toBe('failed');
    const approved = await open({ revisionApproval: 'fail' });
    const unsigned = approved.revisions.prepare({ edits });
    const authorization = approvePlan(unsigned.revision.plan, { by: 'alice' });
    await approved.revisions.commit(approved.revisions.prepare({ edits, authorization }));
    expect(approved.session.control.stopped).toBe(false);
    expect(approved.session.control.held).toBe(false);
  });
});

describe('RunRevisions.revise', () => {
  it('waits until the session has begun, and refuses (E004) once it has ended', async () => {
    const { session, revisions } = await open();
    let settled = false;
    const asked = revisions.revise({ edits: [{ op: 'add', step: { id: 'check', tool: 'echo' } }] }).then((revision) => {
      settled = true;
      return revision;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    session.control.markBegun();
    expect((await asked).revision).toBe(1);
    session.control.endWork();
    await session.control.idle;
    expect(await codeOf(() => revisions.revise({ edits: [] }))).toBe(ErrorCodes.INPUT_INVALID);
  });
});

describe('RunRevisions.reviseByDecision', () => {
  const decision = { type: 'recovery-decision' as const, stepId: 'parse', attempt: 1, decision: 'insert' as const };

  it('journals the decision and its revision in one append', async () => {
    const { session, revisions } = await open();
    const appends: string[][] = [];
    const append = session.store.append.bind(session.store);
    session.store.append = (runId, events, lease) => {
      appends.push(events.map((event) => event.type));
      return append(runId, events, lease);
    };
    const applied = await revisions.reviseByDecision(decision, {
      edits: [{ op: 'add', step: { id: 'check', tool: 'echo' }, before: 'parse' }],
      by: 'recovery',
    });
    expect(applied).toBe(true);
    expect(appends).toEqual([['recovery-decision', 'plan-revise']]);
  });

  it('journals a refused revision as the decision with its error, and changes nothing', async () => {
    const { session, revisions } = await open();
    const applied = await revisions.reviseByDecision(decision, {
      edits: [{ op: 'add', step: { id: 'fetch', tool: 'echo' } }],
    });
    expect(applied).toBe(false);
    const events = await session.events();
    expect(planRevisions(events)).toEqual([]);
    expect(events.find((event) => event.type === 'recovery-decision')).toMatchObject({
      decision: 'insert',
      error: { code: ErrorCodes.PLAN_INVALID },
    });
    expect(session.board.plan).toBe(plan);
  });
});
