import { type Plan, planDigest } from '@stepwise/core';
import { createTestTools } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { PlannerErrorCodes, replanRemaining, SUBMIT_PLAN } from '../src/index.js';
import { scriptedModel, toolCall } from '../src/testing/index.js';

const plan: Plan = {
  id: 'plan_notes',
  goal: 'write notes',
  steps: [
    { id: 'first', tool: 'note', args: { text: 'one' } },
    { id: 'second', tool: 'note', args: { text: 'two' }, dependsOn: ['first'] },
    { id: 'third', tool: 'note', args: { text: 'three' }, dependsOn: ['second'] },
  ],
};

describe('replanRemaining', () => {
  it('sends a changed started step back, then returns a revision that keeps it', async () => {
    const model = scriptedModel([
      toolCall(SUBMIT_PLAN, {
        ...plan,
        steps: [{ id: 'first', tool: 'note', args: { text: 'ONE' } }, plan.steps[1], plan.steps[2]],
      }),
      toolCall(SUBMIT_PLAN, {
        ...plan,
        steps: [plan.steps[0], { id: 'second-b', tool: 'note', args: { text: 'two, shorter' }, dependsOn: ['first'] }],
      }),
    ]);
    const { revision, calls } = await replanRemaining({
      plan,
      started: ['first'],
      reason: 'step "second" failed: the note was too long',
      tools: createTestTools().registry,
      model,
    });

    expect(calls.map((call) => call.problems.map((problem) => problem.path))).toEqual([['/steps/0'], []]);
    expect(revision.plan.steps.map((step) => step.id)).toEqual(['first', 'second-b']);
    expect(revision.parentDigest).toBe(planDigest(plan));
    expect(revision.revision).toBe(1);
    expect(revision.diff.map((change) => change.kind).sort()).toEqual(['step-added', 'step-removed', 'step-removed']);
    const opening = model.requests[0]?.messages[1]?.content ?? '';
    expect(opening).toContain('the note was too long');
    expect(opening).toContain('may not change: first');
    expect(model.requests[1]?.messages.at(-1)?.content).toContain('has started');
  });

  it('fails with E409 when every answer leaves the remaining plan invalid', async () => {
    const cyclic = {
      ...plan,
      steps: [
        plan.steps[0],
        { id: 'x', tool: 'note', args: { text: 'x' }, dependsOn: ['y'] },
        { id: 'y', tool: 'note', args: { text: 'y' }, dependsOn: ['x'] },
      ],
    };
    const error = await replanRemaining({
      plan,
      started: ['first'],
      reason: 'try again',
      tools: createTestTools().registry,
      model: scriptedModel(() => toolCall(SUBMIT_PLAN, cyclic)),
      maxRepairs: 1,
    }).then(
      () => undefined,
      (thrown: unknown) => thrown as { code: string; details: { problems: { kind: string }[] } },
    );
    expect(error?.code).toBe(PlannerErrorCodes.REPAIRS_EXHAUSTED);
    expect(error?.details.problems.map((problem) => problem.kind)).toContain('dependency-cycle');
  });
});
