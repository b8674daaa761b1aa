import { pendingApprovals, type RunStore, readAll, respond } from '@stepwise/core';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sequentialEngine } from '../src/index.js';
import { removeTempDirectories, sqliteVariant } from './support/stores.js';
import { approve } from './support/tools.js';

afterAll(removeTempDirectories);

describe('the strict engine waiting for a person', () => {
  let store: RunStore;
  beforeEach(async () => {
    store = await sqliteVariant.open();
  });
  afterEach(async () => {
    await store.close();
  });

  it('stops at the waiting step (nothing after it runs), then continues from the answer', async () => {
    const { registry, log } = createTestTools();
    const plan = makePlan([
      { id: 'one', tool: 'echo', args: { value: 1 } },
      { id: 'ask', tool: 'note', args: { text: 'x' }, requiresApproval: true },
      { id: 'three', tool: 'echo', args: { value: 3 } },
    ]);
    const options = { tools: registry, store, approvals: { policy: { nonInteractive: 'pause' as const } } };
    const waiting = await sequentialEngine(options).run(plan, { authorization: approve(plan) }).result;
    expect(waiting.status).toBe('waiting');
    expect(log.calls.map((call) => call.stepId)).toEqual(['one']);
    expect((await pendingApprovals(store, waiting.runId)).map((request) => request.stepId)).toEqual(['ask']);

    await respond(store, waiting.runId, { stepId: 'ask', decision: 'approve', by: 'alice' });
    const completed = await sequentialEngine(options).resume(waiting.runId).result;
    expect(completed.status).toBe('completed');
    expect(log.calls.map((call) => call.stepId)).toEqual(['one', 'ask', 'three']);
    const ends = (await readAll(store, waiting.runId)).filter((event) => event.type === 'run-end');
    expect(ends.map((event) => (event as { status: string }).status)).toEqual(['waiting', 'completed']);
  });
});
