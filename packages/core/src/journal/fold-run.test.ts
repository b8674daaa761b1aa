import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import { makePlan } from '../testing/fixtures.js';
import type { GoalProgressEvent, RunEvent, RunEventInput } from './events.js';
import { foldRun } from './fold-run.js';

/** Stamps `inputs` as the journal would: run id, gap-free seq, time. */
function journal(inputs: RunEventInput[]): RunEvent[] {
  return inputs.map((input, index) => ({
    ...input,
    runId: 'run_fold',
    seq: index + 1,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
  })) as RunEvent[];
}

const plan = makePlan([{ id: 'goal' }, { id: 'other' }]);

function progress(stepId: string, attempt: number, turn: number, decision: GoalProgressEvent['decision']) {
  return {
    type: 'goal-progress' as const,
    stepId,
    attempt,
    turn,
    decision,
    criteria: [{ criterion: 'the file out.txt exists', status: turn > 1 ? ('met' as const) : ('unmet' as const) }],
    toolCalls: 1,
    toolFailures: 0,
  };
}

describe('foldRun', () => {
  const start: RunEventInput = { type: 'run-start', planId: plan.id, planDigest: 'digest', plan, engine: 'agentic' };
  const stepStart = (stepId: string, attempt: number): RunEventInput => ({
    type: 'step-start',
    stepId,
    tool: undefined,
    attempt,
    executionId: `ex_${stepId}_${attempt}`,
  });

  it('keeps the latest goal progress per step', () => {
    const events = journal([
      start,
      stepStart('goal', 1),
      stepStart('other', 1),
      progress('goal', 1, 1, 'command'),
      progress('other', 1, 1, 'analyze'),
      progress('goal', 1, 2, 'complete'),
    ]);
    const run = foldRun(events);
    expect(run.steps.get('goal')?.goalProgress).toMatchObject({ seq: 6, turn: 2, decision: 'complete' });
    expect(run.steps.get('goal')?.goalProgress?.criteria).toEqual([
      { criterion: 'the file out.txt exists', status: 'met' },
    ]);
    expect(run.steps.get('other')?.goalProgress).toMatchObject({ seq: 5, turn: 1, decision: 'analyze' });
    expect(run.lastSeq).toBe(6);
  });

  it('forgets the progress of an earlier attempt when the next one starts', () => {
    const events = journal([
      start,
      stepStart('goal', 1),
      progress('goal', 1, 3, 'command'),
      stepStart('goal', 2),
      progress('goal', 2, 1, 'command'),
    ]);
    const retried = foldRun(events.slice(0, 4)).steps.get('goal');
    expect(retried?.attempt).toBe(2);
    expect(retried?.goalProgress).toBeUndefined();
    expect(foldRun(events).steps.get('goal')?.goalProgress).toMatchObject({ attempt: 2, turn: 1 });
  });

  it('advances over events that change no state and refuses a gap in the journal', () => {
    const events = journal([
      start,
      stepStart('goal', 1),
      { type: 'limit-reach', stepId: 'goal', limit: 'turns', value: 10 },
      { type: 'progress-report', stepId: 'goal', executionId: 'ex_goal_1', percent: 50 },
    ]);
    const run = foldRun(events);
    expect(run.lastSeq).toBe(4);
    expect(run.updatedAt).toBe(events[3]?.at);
    expect(run.steps.get('goal')?.status).toBe('running');
    const gap = [...events, { ...(events[3] as RunEvent), seq: 6 }];
    expect(() => foldRun(gap)).toThrow(expect.objectContaining({ code: ErrorCodes.JOURNAL_CONFLICT }));
  });

  it("takes a step's first appearance in a plan, in a new run and in a revision of a running one", () => {
    const duplicated: Plan = {
      id: 'dup',
      version: 1,
      steps: [
        { id: 'a', tool: 'echo' },
        { id: 'b', tool: 'echo' },
        { id: 'a', tool: 'note' },
      ],
    };
    const started = foldRun(
      journal([{ ...start, planId: 'dup', planDigest: planDigest(duplicated), plan: duplicated }]),
    );
    expect([...started.steps.keys()]).toEqual(['a', 'b']);
    expect(started.steps.get('a')?.tool).toBe('echo');
    // A revision whose plan has the run's steps (a first, then again with another tool) and a new one.
    const revised: Plan = {
      ...duplicated,
      steps: [
        { id: 'c', tool: 'echo' },
        { id: 'a', tool: 'fail' },
        { id: 'b', tool: 'note' },
        { id: 'a', tool: 'note' },
        { id: 'c', tool: 'fail' },
      ],
    };
    const revise: RunEventInput = {
      type: 'plan-revise',
      revision: 1,
      parentDigest: planDigest(duplicated),
      digest: planDigest(revised),
      diff: { added: [], removed: [], changed: [] },
      plan: revised,
      by: 'test',
    } as unknown as RunEventInput;
    const run = foldRun(
      journal([{ ...start, planId: 'dup', planDigest: planDigest(duplicated), plan: duplicated }, revise]),
    );
    expect(Object.fromEntries([...run.steps].map(([id, step]) => [id, step.tool]))).toEqual({
      a: 'fail',
      b: 'note',
      c: 'echo',
    });
  });
});
