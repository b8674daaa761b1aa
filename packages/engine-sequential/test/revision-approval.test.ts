import { approvePlan, defineTool, ErrorCodes, type RunStore, readAll, StepwiseError } from '@stepwise/core';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSequentialExecutor, sequentialEngine, strictEngine } from '../src/index.js';
import { removeTempDirectories, sqliteVariant } from './support/stores.js';

afterAll(removeTempDirectories);

/** Core's test tools plus `gate`, whose call waits until the test opens it. */
function toolsWithGate() {
  const tools = createTestTools();
  let markStarted: () => void = () => undefined;
  let open: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  tools.registry.register(
    defineTool({
      name: 'gate',
      description: 'Waits until the test opens it.',
      input: { type: 'object', properties: {} },
      effect: 'read',
      execute: async (_input, context) => {
        tools.log.calls.push({ tool: 'gate', args: {}, stepId: context.stepId, attempt: context.attempt });
        markStarted();
        await opened;
        return { opened: true };
      },
    }),
  );
  return { ...tools, started, open };
}

describe('the strict engine and plan revisions', () => {
  let store: RunStore;
  beforeEach(async () => {
    store = await sqliteVariant.open();
  });
  afterEach(async () => {
    await store.close();
  });

  const plan = makePlan([
    { id: 'one', tool: 'gate', args: {} },
    { id: 'two', tool: 'echo', args: { value: 2 } },
  ]);

  it('refuses to continue on an unapproved revision: the run waits, resume needs an approval of the new digest', async () => {
    const { registry, log, started, open } = toolsWithGate();
    const engine = strictEngine({ tools: registry, store });
    const handle = engine.run(plan, { authorization: approvePlan(plan, { by: 'alice' }) });
    await started;
    const revision = await handle.revise({
      edits: [{ op: 'add', step: { id: 'extra', tool: 'echo', args: { value: 'extra' } } }],
      by: 'bob',
    });
    open();
    const waiting = await handle.result;
    expect(waiting.status).toBe('waiting');
    // The step in flight finished; nothing of the unapproved revision ran.
    expect(log.calls.map((call) => call.stepId)).toEqual(['one']);
    expect(waiting.planDigest).toBe(revision.digest);

    const refused = await strictEngine({ tools: registry, store })
      .resume(waiting.runId)
      .result.catch((error: unknown) => error);
    expect(StepwiseError.isInstance(refused) && refused.code).toBe(ErrorCodes.PLAN_MISMATCH);
    const stale = await strictEngine({ tools: registry, store })
      .resume(waiting.runId, { authorization: approvePlan(plan, { by: 'alice' }) })
      .result.catch((error: unknown) => error);
    expect(StepwiseError.isInstance(stale) && stale.code).toBe(ErrorCodes.PLAN_MISMATCH);
    expect(log.calls.map((call) => call.stepId)).toEqual(['one']);

    const completed = await strictEngine({ tools: registry, store }).resume(waiting.runId, {
      authorization: approvePlan(revision.plan, { by: 'carol' }),
    }).result;
    expect(completed.status).toBe('completed');
    expect(log.calls.map((call) => call.stepId)).toEqual(['one', 'two', 'extra']);
    const events = await readAll(store, waiting.runId);
    const resumed = events.filter((event) => event.type === 'run-resume');
    expect(resumed.map((event) => (event as { authorization?: { by: string } }).authorization?.by)).toEqual(['carol']);
    expect(events.filter((event) => event.type === 'run-end').map((event) => event.status)).toEqual([
      'waiting',
      'completed',
    ]);
  });

  it('continues at once on a revision that comes with its approval', async () => {
    const { registry, log, started, open } = toolsWithGate();
    const handle = strictEngine({ tools: registry, store }).run(plan, {
      authorization: approvePlan(plan, { by: 'alice' }),
    });
    await started;
    const revised = makePlan([...plan.steps.filter((step) => step.id !== 'two')]);
    const wrong = await handle
      .revise({ edits: [{ op: 'remove', stepId: 'two' }], authorization: approvePlan(revised, { by: 'bob' }) })
      .catch((error: unknown) => error);
    // Approving a look-alike plan is not approving the revision (it carries the digest chain).
    expect(StepwiseError.isInstance(wrong) && wrong.code).toBe(ErrorCodes.PLAN_MISMATCH);
    const edits = [{ op: 'edit' as const, stepId: 'two', changes: { args: { value: 'approved' } } }];
    const { revisePlan } = await import('@stepwise/core');
    const expected = revisePlan(plan, edits, { started: ['one'], engine: 'sequential' });
    await handle.revise({ edits, authorization: approvePlan(expected.plan, { by: 'bob' }) });
    open();
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(log.calls.map((call) => [call.stepId, call.args])).toEqual([
      ['one', {}],
      ['two', { value: 'approved' }],
    ]);
  });

  it('works the same through sequentialEngine: revise, wait, resume with the approval of the revised plan', async () => {
    const { registry, log, started, open } = toolsWithGate();
    const engine = sequentialEngine({ tools: registry, store });
    const handle = engine.run(plan, { authorization: approvePlan(plan, { by: 'alice' }) });
    await started;
    const revision = await handle.revise({ edits: [{ op: 'remove', stepId: 'two' }] });
    open();
    const waiting = await handle.result;
    expect(waiting.status).toBe('waiting');
    const refused = await sequentialEngine({ tools: registry, store })
      .resume(waiting.runId)
      .result.catch((error: unknown) => error);
    expect(StepwiseError.isInstance(refused) && refused.code).toBe(ErrorCodes.PLAN_MISMATCH);
    const completed = await sequentialEngine({ tools: registry, store }).resume(waiting.runId, {
      authorization: approvePlan(revision.plan, { by: 'carol' }),
    }).result;
    expect(completed.status).toBe('completed');
    expect(completed.steps.map((step) => step.stepId)).toEqual(['one']);
    expect(log.calls.map((call) => call.stepId)).toEqual(['one']);
  });

  it('fails the run on an unapproved revision when revisionApproval is "fail"', async () => {
    const { registry, log, started, open } = toolsWithGate();
    const handle = strictEngine({ tools: registry, store, revisionApproval: 'fail' }).run(plan, {
      authorization: approvePlan(plan, { by: 'alice' }),
    });
    await started;
    await handle.revise({ edits: [{ op: 'remove', stepId: 'two' }] });
    open();
    const result = await handle.result;
    expect(result.status).toBe('failed');
    expect(log.calls.map((call) => call.stepId)).toEqual(['one']);
    expect((await readAll(store, result.runId)).some((event) => event.type === 'plan-revise')).toBe(true);
  });
  it('starts no further step after an unapproved revision when the host steps one at a time', async () => {
    const { registry, log } = createTestTools();
    const steps = makePlan([
      { id: 'one', tool: 'echo', args: { value: 1 } },
      { id: 'two', tool: 'echo', args: { value: 2 } },
    ]);
    const executor = createSequentialExecutor({ tools: registry, store });
    executor.load(steps, approvePlan(steps, { by: 'alice' }));
    expect(await executor.executeStep()).toMatchObject({ stepId: 'one', status: 'succeeded' });
    await executor.handle().revise({
      edits: [{ op: 'add', step: { id: 'extra', tool: 'echo', args: { value: 'extra' } } }],
      by: 'bob',
    });
    // The revision is not approved: the run holds, and asking for the next step runs nothing.
    expect(await executor.executeStep()).toBeUndefined();
    expect(log.calls.map((call) => call.stepId)).toEqual(['one']);
    const result = await executor.handle().result;
    expect(result.status).toBe('waiting');
  });
});
