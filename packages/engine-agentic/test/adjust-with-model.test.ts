import { ErrorCodes, MemoryStore, type RunEvent, readAll } from '@stepwise/core';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { ADJUST_PLAN, adjustWithModel, agenticEngine } from '../src/index.js';
import { type ScriptedTurn, scriptedModel, toolCall } from '../src/testing/index.js';

const ofType = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type);

function setup(answers: ScriptedTurn[], when?: 'always' | 'failure') {
  const { registry, log } = createTestTools();
  const store = new MemoryStore();
  const adviser = scriptedModel(answers, { name: 'adviser' });
  const engine = agenticEngine({
    tools: registry,
    store,
    // Only tool steps here: the engine's own model is never asked.
    model: scriptedModel([]),
    adjust: adjustWithModel({ model: adviser, tools: registry, ...(when ? { when } : {}) }),
  });
  return { store, engine, adviser, ran: () => log.calls.map((call) => call.stepId) };
}

const plan = makePlan([
  { id: 'fetch', tool: 'fail', args: { message: 'the mirror is down' } },
  { id: 'use', tool: 'echo', args: { value: 1 }, dependsOn: ['fetch'] },
]);

describe('adjustWithModel', () => {
  it('asks the model after a failure; its revision replaces the blocked step and every call is journaled', async () => {
    const { store, engine, adviser, ran } = setup([
      toolCall(ADJUST_PLAN, {
        action: 'revise',
        reason: 'use the cached copy',
        edits: [
          { op: 'remove', stepId: 'use' },
          { op: 'add', step: { id: 'cached', tool: 'echo', args: { value: 'cached' } } },
        ],
      }),
    ]);
    const result = await engine.run(plan).result;
    expect(ran()).toEqual(['fetch', 'cached']);
    expect(result.plan?.steps.map((step) => step.id)).toEqual(['fetch', 'cached']);
    // The model saw the failure and the steps it may not touch.
    const prompt = adviser.requests[0]?.messages.at(-1)?.content ?? '';
    expect(prompt).toContain('the mirror is down');
    expect(prompt).toContain('may not change: fetch');

    const events = await readAll(store, result.runId);
    const calls = ofType(events, 'model-call');
    expect(calls.map((call) => [call.stepId, (call.request as { purpose: string }).purpose, call.model])).toEqual([
      ['fetch', 'adjust', 'adviser'],
    ]);
    expect(ofType(events, 'adjust-decision').map((event) => [event.stepId, event.status, event.decision])).toEqual([
      ['fetch', 'failed', 'revise'],
      ['cached', 'succeeded', 'continue'],
    ]);
    expect(ofType(events, 'plan-revise').map((event) => [event.by, event.reason])).toEqual([
      ['adjust', 'use the cached copy'],
    ]);
  });

  it('journals a non-JSON answer as E408 with the model call, and the default failure policy applies', async () => {
    const { store, engine, ran } = setup([{ text: 'I think the plan is fine, carry on.' }]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('failed');
    expect(ran()).toEqual(['fetch']);
    const events = await readAll(store, result.runId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const [decision] = ofType(events, 'adjust-decision');
    expect([decision?.decision, decision?.error?.code]).toEqual(['continue', ErrorCodes.PLAN_ANSWER_NOT_JSON]);
    expect(decision?.error?.message).toContain('I think the plan is fine');
    expect(ofType(events, 'model-call')).toHaveLength(1);
    expect(ofType(events, 'plan-revise')).toHaveLength(0);
  });

  it('journals an answer that is JSON but not a decision as E004', async () => {
    const { store, engine } = setup([toolCall(ADJUST_PLAN, { action: 'rewrite everything' })]);
    const result = await engine.run(plan).result;
    const [decision] = ofType(await readAll(store, result.runId), 'adjust-decision');
    expect(decision?.error?.code).toBe(ErrorCodes.INPUT_INVALID);
    expect(decision?.error?.location).toBe('/action');
  });

  it('asks after every step with when: "always"', async () => {
    const { adviser, engine } = setup(
      [toolCall(ADJUST_PLAN, { action: 'continue' }), toolCall(ADJUST_PLAN, { action: 'continue' })],
      'always',
    );
    const chain = makePlan([
      { id: 'one', tool: 'echo', args: {} },
      { id: 'two', tool: 'echo', args: {}, dependsOn: ['one'] },
    ]);
    const result = await engine.run(chain).result;
    expect(result.status).toBe('completed');
    expect(adviser.calls).toBe(2);
  });
});
