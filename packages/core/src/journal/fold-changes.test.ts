import { describe, expect, it } from 'vitest';
import { diffPlans } from '../plan/plan-diff.js';
import { planDigest } from '../plan/plan-digest.js';
import type { Plan } from '../plan/plan-schema.js';
import type { RunEvent, RunEventInput } from './events.js';
import { FoldChanges } from './fold-changes.js';
import { applyEvent, emptyRun, type FoldedRun } from './fold-run.js';

const plan: Plan = { id: 'plan', steps: [{ id: 'a', tool: 'echo' }, { id: 'b', tool: 'echo' }, { id: 'c' }] };

/** Applies `inputs` (stamped from the run's next seq) and returns what they changed. */
function apply(run: FoldedRun, inputs: RunEventInput[]): FoldChanges {
  const changes = new FoldChanges();
  for (const input of inputs) {
    const event = { ...input, runId: run.runId, seq: run.lastSeq + 1, at: '2030-01-01T00:00:00.000Z' } as RunEvent;
    applyEvent(run, event, changes);
  }
  return changes;
}

const started = (stepId: string, attempt = 1): RunEventInput[] => [
  { type: 'step-start', stepId, tool: 'echo', attempt, executionId: `ex_${stepId}_${attempt}` },
  {
    type: 'tool-call',
    stepId,
    executionId: `ex_${stepId}_${attempt}`,
    attempt,
    tool: 'echo',
    effect: 'read',
    idempotent: true,
    args: {},
  },
];

describe('FoldChanges', () => {
  it('names the steps each event created or changed, in order, and the executions called', () => {
    const run = emptyRun('run_changes');
    const start = apply(run, [
      { type: 'run-start', planId: 'plan', planDigest: planDigest(plan), plan, engine: 'dag' },
    ]);
    expect([...start.steps]).toEqual(['a', 'b', 'c']);
    expect([...start.createdSteps]).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
    const step = apply(run, [
      ...started('b'),
      { type: 'progress-report', stepId: 'b', executionId: 'ex_b_1', percent: 5 },
    ]);
    expect([...step.steps]).toEqual(['b']);
    expect(step.createdSteps.size).toBe(0);
    expect([...step.executions]).toEqual(['ex_b_1']);
  });

  it('a result of a call the run never made changes its step, not an execution', () => {
    const run = emptyRun('run_changes');
    const changes = apply(run, [
      { type: 'run-start', planId: 'plan', planDigest: planDigest(plan), plan, engine: 'dag' },
      {
        type: 'tool-result',
        stepId: 'x',
        executionId: 'ex_other',
        tool: 'echo',
        status: 'succeeded',
        startedAt: '',
        durationMs: 1,
      },
    ]);
    expect(changes.executions.size).toBe(0);
    expect(changes.createdSteps.get('x')).toBe(2);
  });

  it('run-continue names the steps it reset or skips; a revision names the steps it removed and added', () => {
    const run = emptyRun('run_changes');
    apply(run, [
      { type: 'run-start', planId: 'plan', planDigest: planDigest(plan), plan, engine: 'dag' },
      ...started('a'),
      {
        type: 'step-end',
        stepId: 'a',
        result: {
          stepId: 'a',
          tool: 'echo',
          status: 'cancelled',
          executionId: 'ex_a_1',
          attempt: 1,
          startedAt: '',
          durationMs: 1,
        },
      },
      { type: 'run-end', status: 'cancelled', durationMs: 5 },
    ]);
    const continued = apply(run, [{ type: 'run-continue', from: 'cancelled', retry: [], skip: ['b'] }]);
    expect([...continued.steps]).toEqual(['a', 'b']);
    expect(run.steps.get('a')).toMatchObject({ status: 'pending', endedAt: undefined, result: undefined });

    const revised: Plan = {
      ...plan,
      revision: 1,
      steps: [
        { id: 'a', tool: 'echo' },
        { id: 'd', tool: 'note' },
      ],
    };
    const revision = apply(run, [
      {
        type: 'plan-revise',
        revision: 1,
        parentDigest: planDigest(plan),
        digest: planDigest(revised),
        diff: diffPlans(plan, revised),
        plan: revised,
        by: 'ops',
      },
    ]);
    expect([...revision.removedSteps].sort()).toEqual(['b', 'c']);
    expect([...revision.createdSteps.keys()]).toEqual(['d']);
    expect([...revision.steps]).toEqual(['a', 'd']);
    expect(run.steps.get('d')?.tool).toBe('note');
  });
});
