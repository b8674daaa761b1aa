import {
  type AdjustHook,
  defineTool,
  ErrorCodes,
  MemoryStore,
  planDigest,
  type RunEvent,
  StepwiseError,
} from '@stepwise/core';
import { foldRun, type PlanReviseEvent } from '@stepwise/core/store';
import { makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { type DagEngineOptions, dagEngine } from '../src/index.js';
import { createHarness, storedEvents } from './harness.js';

/** A `gate` tool: each call waits until the test opens the gate named in its args. */
function gates() {
  const waiting = new Map<string, { started: Promise<void>; open: () => void; opened: Promise<void> }>();
  const entry = (name: string) => {
    let found = waiting.get(name);
    if (!found) {
      let markStarted: () => void = () => undefined;
      let open: () => void = () => undefined;
      const started = new Promise<void>((resolve) => {
        markStarted = resolve;
      });
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      found = { started, open, opened };
      (found as { markStarted?: () => void }).markStarted = markStarted;
      waiting.set(name, found);
    }
    return found as typeof found & { markStarted: () => void };
  };
  const tool = defineTool({
    name: 'gate',
    description: 'Waits until the test opens the named gate.',
    input: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    effect: 'read',
    execute: async (input) => {
      const gate = entry((input as { name: string }).name);
      gate.markStarted();
      await gate.opened;
      return { opened: (input as { name: string }).name };
    },
  });
  return { tool, started: (name: string) => entry(name).started, open: (name: string) => entry(name).open() };
}

function setup(extra: Partial<DagEngineOptions> = {}) {
  const harness = createHarness();
  const gate = gates();
  harness.registry.register(gate.tool);
  const store = new MemoryStore();
  const engine = dagEngine({ tools: harness.registry, store, ...extra });
  const ran = () => harness.log.calls.map((call) => call.stepId);
  return { harness, gate, store, engine, ran };
}

const ofType = <T extends RunEvent['type']>(events: RunEvent[], type: T) =>
  events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type);

describe('revising a running plan (handle.revise)', () => {
  it('adds, removes and edits pending steps while a step is in flight; the run carries out the revision', async () => {
    const { gate, store, engine, ran, harness } = setup();
    const plan = makePlan([
      { id: 'a', tool: 'gate', args: { name: 'a' } },
      { id: 'b', tool: 'echo', args: { value: 'old' }, dependsOn: ['a'] },
      { id: 'c', tool: 'echo', args: { value: 'c' }, dependsOn: ['a'] },
    ]);
    const handle = engine.run(plan);
    await gate.started('a');
    const revision = await handle.revise({
      edits: [
        { op: 'add', step: { id: 'd', tool: 'echo', args: { value: 'd' }, dependsOn: ['b'] } },
        { op: 'remove', stepId: 'c' },
        { op: 'edit', stepId: 'b', changes: { args: { value: 'new' } } },
      ],
      by: 'alice',
      reason: 'c is not needed',
    });
    expect(revision.revision).toBe(1);
    gate.open('a');
    const result = await handle.result;

    expect(result.status).toBe('completed');
    expect(ran()).toEqual(['b', 'd']);
    expect(harness.log.calls.find((call) => call.stepId === 'b')?.args).toEqual({ value: 'new' });
    expect(result.steps.map((step) => step.stepId)).toEqual(['a', 'b', 'd']);
    expect(result.plan?.steps.map((step) => step.id)).toEqual(['a', 'b', 'd']);
    expect(result.planDigest).toBe(planDigest(result.plan as NonNullable<typeof result.plan>));
    expect(result.planDigest).not.toBe(planDigest(plan));
    expect(result.revisions?.map((each) => [each.revision, each.by, each.parentDigest])).toEqual([
      [1, 'alice', planDigest(plan)],
    ]);

    const events = await storedEvents(store, result.runId);
    const [revised] = ofType(events, 'plan-revise') as PlanReviseEvent[];
    expect(revised?.diff.map((change) => `${change.kind}:${'stepId' in change ? change.stepId : ''}`).sort()).toEqual([
      'step-added:d',
      'step-changed:b',
      'step-removed:c',
    ]);
    // Durable before the step it added could start.
    const reviseSeq = revised?.seq ?? 0;
    const dStart = ofType(events, 'step-start').find((event) => event.stepId === 'd');
    expect(dStart && dStart.seq > reviseSeq).toBe(true);
    expect(ofType(events, 'run-end')[0]?.revision).toBe(1);
    const folded = foldRun(events);
    expect(folded.plan?.steps.map((step) => step.id)).toEqual(['a', 'b', 'd']);
    expect(folded.planDigest).toBe(result.planDigest);
    expect(folded.revisions).toHaveLength(1);
    expect([...folded.steps.keys()].sort()).toEqual(['a', 'b', 'd']);
  });

  it('refuses a revision touching a started step (E005), a cycle (E001) and an ended run (E004); nothing is journaled', async () => {
    const { gate, store, engine, ran } = setup();
    const plan = makePlan([
      { id: 'done', tool: 'echo', args: {} },
      { id: 'a', tool: 'gate', args: { name: 'a' }, dependsOn: ['done'] },
      { id: 'b', tool: 'echo', args: { value: 1 }, dependsOn: ['a'] },
      { id: 'c', tool: 'echo', args: { value: 2 }, dependsOn: ['b'] },
    ]);
    const handle = engine.run(plan);
    await gate.started('a');
    const finished = await handle
      .revise({ edits: [{ op: 'remove', stepId: 'done' }] })
      .catch((error: unknown) => error);
    expect(StepwiseError.isInstance(finished) && finished.code).toBe(ErrorCodes.PLAN_REVISION_CONFLICT);
    expect((finished as StepwiseError).details?.stepId).toBe('done');
    const started = await handle
      .revise({ edits: [{ op: 'edit', stepId: 'a', changes: { args: { name: 'z' } } }] })
      .catch((error: unknown) => error);
    expect(StepwiseError.isInstance(started) && started.code).toBe(ErrorCodes.PLAN_REVISION_CONFLICT);
    expect((started as StepwiseError).location).toBe('/steps/1');

    const cycle = await handle
      .revise({ edits: [{ op: 'edit', stepId: 'b', changes: { dependsOn: ['a', 'c'] } }] })
      .catch((error: unknown) => error);
    expect(StepwiseError.isInstance(cycle) && cycle.code).toBe(ErrorCodes.PLAN_INVALID);
    const problems = (cycle as StepwiseError).details?.problems as { code: string; message: string }[];
    expect(problems.some((problem) => /cycle/i.test(problem.message))).toBe(true);

    gate.open('a');
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(ran()).toEqual(['done', 'b', 'c']);
    expect(result.revisions).toBeUndefined();
    const events = await storedEvents(store, result.runId);
    expect(ofType(events, 'plan-revise')).toHaveLength(0);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));

    const ended = await handle.revise({ edits: [{ op: 'remove', stepId: 'c' }] }).catch((error: unknown) => error);
    expect(StepwiseError.isInstance(ended) && ended.code).toBe(ErrorCodes.INPUT_INVALID);
  });

  it('regenerates the rest of the plan (remaining): pending steps are replaced, started ones stay', async () => {
    const { gate, engine, ran } = setup();
    const plan = makePlan([
      { id: 'a', tool: 'gate', args: { name: 'a' } },
      { id: 'b', tool: 'echo', args: { value: 1 }, dependsOn: ['a'] },
    ]);
    const handle = engine.run(plan);
    await gate.started('a');
    await handle.revise({
      remaining: [
        { id: 'x', tool: 'echo', args: { value: 'x' }, dependsOn: ['a'] },
        { id: 'y', tool: 'echo', args: { value: 'y' }, dependsOn: ['x'] },
      ],
    });
    gate.open('a');
    const result = await handle.result;
    expect(result.status).toBe('completed');
    expect(ran()).toEqual(['x', 'y']);
    expect(result.plan?.steps.map((step) => step.id)).toEqual(['a', 'x', 'y']);
  });
});

describe('the adjust hook', () => {
  it('inserts a step mid-run, before the dependents of the step that just ended; every decision is journaled', async () => {
    const adjust: AdjustHook = (step) =>
      step.id === 'build'
        ? {
            action: 'revise',
            reason: 'check the build before shipping',
            edits: [
              { op: 'add', step: { id: 'check', tool: 'echo', args: { value: 'check' }, dependsOn: ['build'] } },
              { op: 'edit', stepId: 'ship', changes: { dependsOn: ['build', 'check'] } },
            ],
          }
        : undefined;
    const { store, engine, ran } = setup({ adjust });
    const plan = makePlan([
      { id: 'build', tool: 'echo', args: { value: 'build' } },
      { id: 'ship', tool: 'echo', args: { value: 'ship' }, dependsOn: ['build'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    expect(ran()).toEqual(['build', 'check', 'ship']);
    const events = await storedEvents(store, result.runId);
    expect(ofType(events, 'adjust-decision').map((event) => [event.stepId, event.decision])).toEqual([
      ['build', 'revise'],
      ['check', 'continue'],
      ['ship', 'continue'],
    ]);
    const revise = ofType(events, 'plan-revise')[0];
    expect(revise?.by).toBe('adjust');
    expect(revise?.reason).toBe('check the build before shipping');
    expect(result.revisions).toHaveLength(1);
  });

  it('takes a failure over: a revision after a failed critical step replaces its dependents and the run goes on', async () => {
    const adjust: AdjustHook = (step, result) =>
      step.id === 'fetch' && result.status === 'failed'
        ? {
            action: 'revise',
            edits: [
              { op: 'remove', stepId: 'use' },
              { op: 'add', step: { id: 'fallback', tool: 'echo', args: { value: 'cached' } } },
            ],
          }
        : undefined;
    const { engine, ran } = setup({ adjust });
    const plan = makePlan([
      { id: 'fetch', tool: 'fail', args: {} },
      { id: 'use', tool: 'echo', args: { value: 1 }, dependsOn: ['fetch'] },
    ]);
    const result = await engine.run(plan).result;
    expect(ran()).toEqual(['fetch', 'fallback']);
    expect(result.status).toBe('partial');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['fetch', 'failed'],
      ['fallback', 'succeeded'],
    ]);
  });

  it('stops the run when asked: nothing after runs and the run ends cancelled', async () => {
    const { store, engine, ran } = setup({
      adjust: (step) => (step.id === 'one' ? { action: 'stop', reason: 'enough' } : undefined),
      concurrency: 1,
    });
    const plan = makePlan([
      { id: 'one', tool: 'echo', args: {} },
      { id: 'two', tool: 'echo', args: {}, dependsOn: ['one'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('cancelled');
    expect(ran()).toEqual(['one']);
    const decisions = ofType(await storedEvents(store, result.runId), 'adjust-decision');
    expect(decisions.map((event) => [event.decision, event.reason])).toEqual([['stop', 'enough']]);
  });

  it('keeps, but does not apply, a decision that comes after the run was cancelled', async () => {
    let release: () => void = () => undefined;
    const decided = new Promise<void>((resolve) => {
      release = resolve;
    });
    let asked: () => void = () => undefined;
    const asking = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const { store, engine, ran } = setup({
      adjust: async () => {
        asked();
        await decided;
        return { action: 'revise', edits: [{ op: 'add', step: { id: 'late', tool: 'echo', args: {} } }] };
      },
    });
    const handle = engine.run(
      makePlan([
        { id: 'one', tool: 'echo', args: {} },
        { id: 'two', tool: 'echo', args: {}, dependsOn: ['one'] },
      ]),
    );
    await asking;
    handle.cancel('stop now');
    release();
    const result = await handle.result;
    expect(result.status).toBe('cancelled');
    expect(ran()).toEqual(['one']);
    const events = await storedEvents(store, result.runId);
    expect(ofType(events, 'plan-revise')).toHaveLength(0);
    expect(ofType(events, 'adjust-decision').map((event) => [event.decision, event.error?.code])).toEqual([
      ['revise', ErrorCodes.STEP_CANCELLED],
    ]);
  });

  it('journals a hook that answers garbage or a cycle with its error, and the run goes on unrevised', async () => {
    const answers: unknown[] = [
      'not a decision',
      {
        action: 'revise',
        edits: [
          { op: 'add', step: { id: 'loop', tool: 'echo', args: {}, dependsOn: ['three'] } },
          { op: 'edit', stepId: 'three', changes: { dependsOn: ['two', 'loop'] } },
        ],
      },
      { action: 'revise', edits: [{ op: 'edit', stepId: 'one', changes: { args: { value: 9 } } }] },
    ];
    const { store, engine, ran } = setup({ adjust: () => answers.shift() as undefined });
    const plan = makePlan([
      { id: 'one', tool: 'echo', args: {} },
      { id: 'two', tool: 'echo', args: {}, dependsOn: ['one'] },
      { id: 'three', tool: 'echo', args: {}, dependsOn: ['two'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    expect(ran()).toEqual(['one', 'two', 'three']);
    const events = await storedEvents(store, result.runId);
    expect(ofType(events, 'plan-revise')).toHaveLength(0);
    expect(ofType(events, 'adjust-decision').map((event) => [event.decision, event.error?.code])).toEqual([
      ['continue', ErrorCodes.INPUT_INVALID],
      ['revise', ErrorCodes.PLAN_INVALID],
      ['revise', ErrorCodes.PLAN_REVISION_CONFLICT],
    ]);
  });
});

describe('the recovery hook inserting steps', () => {
  it('writes an insert decision and the revision it made in one append (a crash keeps both or neither)', async () => {
    const batches: string[][] = [];
    class RecordingStore extends MemoryStore {
      override append(...args: Parameters<MemoryStore['append']>): Promise<void> {
        batches.push(args[1].map((event) => event.type));
        return super.append(...args);
      }
    }
    const harness = createHarness();
    const engine = dagEngine({
      tools: harness.registry,
      store: new RecordingStore(),
      onStepFailed: (step, _error, context) =>
        step.id === 'test' && context.recoveries === 0
          ? { action: 'insert', steps: [{ id: 'fix', tool: 'echo', args: { value: 'fixed' } }] }
          : undefined,
    });
    const plan = makePlan([{ id: 'test', tool: 'flaky', args: { failures: 1, retryable: false } }]);
    expect((await engine.run(plan).result).status).toBe('completed');
    const withDecision = batches.find((batch) => batch.includes('recovery-decision'));
    expect(withDecision).toBeDefined();
    expect(withDecision).toContain('plan-revise');
  });

  it('inserts a fix before the failed step, then retries it once the fix succeeded', async () => {
    const { store, engine, ran } = setup({
      onStepFailed: (step, _error, context) =>
        step.id === 'test' && context.recoveries === 0
          ? { action: 'insert', steps: [{ id: 'fix', tool: 'echo', args: { value: 'fixed' } }], reason: 'fix first' }
          : undefined,
    });
    const plan = makePlan([
      { id: 'test', tool: 'flaky', args: { failures: 1, retryable: false } },
      { id: 'after', tool: 'echo', args: {}, dependsOn: ['test'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('completed');
    expect(ran()).toEqual(['test', 'fix', 'test', 'after']);
    expect(result.plan?.steps.map((step) => [step.id, step.dependsOn ?? []])).toEqual([
      ['fix', []],
      ['test', ['fix']],
      ['after', ['test']],
    ]);
    const events = await storedEvents(store, result.runId);
    const decision = ofType(events, 'recovery-decision')[0];
    expect([decision?.decision, decision?.afterwards, decision?.steps?.map((step) => step.id)]).toEqual([
      'insert',
      'retry',
      ['fix'],
    ]);
    expect(ofType(events, 'plan-revise')[0]?.by).toBe('recovery');
  });

  it('resumes a cancelled run on the revised plan: the inserted step runs, then the failed step is retried', async () => {
    const { gate, store, engine, ran, harness } = setup({
      onStepFailed: (step, _error, context) =>
        step.id === 'test' && context.recoveries === 0
          ? { action: 'insert', steps: [{ id: 'fix', tool: 'gate', args: { name: 'fix' } }] }
          : undefined,
    });
    const plan = makePlan([{ id: 'test', tool: 'flaky', args: { failures: 1, retryable: false } }]);
    const handle = engine.run(plan);
    await gate.started('fix');
    handle.cancel('the host stops for the night');
    gate.open('fix');
    const cancelled = await handle.result;
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.plan?.steps.map((step) => step.id)).toEqual(['fix', 'test']);

    const resumed = await dagEngine({
      tools: harness.registry,
      store,
      onStepFailed: () => undefined,
    }).resume(cancelled.runId).result;
    expect(resumed.status).toBe('completed');
    expect(ran()).toEqual(['test', 'test']);
    expect(resumed.steps.map((step) => [step.stepId, step.status, step.attempt])).toEqual([
      ['fix', 'succeeded', 2],
      ['test', 'succeeded', 2],
    ]);
    const events = await storedEvents(store, cancelled.runId);
    expect(ofType(events, 'plan-revise')).toHaveLength(1);
    expect(resumed.revisions).toHaveLength(1);
  });

  it('folds and resumes a revised run whose plan the redactor masked (a token in the args)', async () => {
    const { gate, store, engine, harness } = setup();
    const token = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
    const plan = makePlan([
      { id: 'a', tool: 'gate', args: { name: 'a' } },
      { id: 'b', tool: 'echo', args: { value: token }, dependsOn: ['a'] },
    ]);
    const handle = engine.run(plan);
    await gate.started('a');
    await handle.revise({ edits: [{ op: 'add', step: { id: 'c', tool: 'echo', args: { value: 'c' } } }], by: 'alice' });
    handle.cancel('stop before b');
    gate.open('a');
    const cancelled = await handle.result;
    expect(cancelled.status).toBe('cancelled');

    const events = await storedEvents(store, cancelled.runId);
    // The journal holds the masked plan, so its digest cannot be recomputed from it...
    expect(JSON.stringify(ofType(events, 'plan-revise')[0]?.plan)).not.toContain(token);
    // ...yet the fold keeps the chain and the run resumes on the revised plan.
    const folded = foldRun(events);
    expect(folded.planDigest).toBe(cancelled.planDigest);
    expect(folded.plan?.steps.map((step) => step.id)).toEqual(['a', 'b', 'c']);
    const resumed = await dagEngine({ tools: harness.registry, store }).resume(cancelled.runId).result;
    expect(resumed.status).toBe('completed');
    expect(resumed.steps.map((step) => step.stepId).sort()).toEqual(['a', 'b', 'c']);
  });

  it('revises a resumed run whose plan the redactor masked: the chain names the journaled digest', async () => {
    const { gate, store, engine, harness } = setup();
    const token = `ghp_${'f6G7h8J9k0'.repeat(4)}`;
    const plan = makePlan([
      { id: 'a', tool: 'gate', args: { name: 'held' } },
      { id: 'b', tool: 'echo', args: { value: token }, dependsOn: ['a'] },
    ]);
    const first = engine.run(plan);
    await gate.started('held');
    first.cancel('the host stops');
    const cancelled = await first.result;
    expect(cancelled.status).toBe('cancelled');

    // The resumed session runs on the journal's masked plan; a revises it while `a` runs again.
    const second = dagEngine({ tools: harness.registry, store }).resume(cancelled.runId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await second.revise({ edits: [{ op: 'add', step: { id: 'c', tool: 'echo', args: { value: 'c' } } }], by: 'alice' });
    gate.open('held');
    const resumed = await second.result;
    expect(resumed.status).toBe('completed');
    const events = await storedEvents(store, cancelled.runId);
    const revised = ofType(events, 'plan-revise')[0];
    expect(revised?.parentDigest).toBe(cancelled.planDigest);
    expect(() => foldRun(events)).not.toThrow();
    expect(foldRun(events).plan?.steps.map((step) => step.id)).toEqual(['a', 'b', 'c']);
  });

  it('lets no step end into a revision being committed: the revision applies to the board it was checked against', async () => {
    // A store whose appends can be held, so a step ends while the revision's plan-revise is being written.
    let held: Promise<void> | undefined;
    let releaseAppends: () => void = () => undefined;
    class HeldStore extends MemoryStore {
      override async append(...args: Parameters<MemoryStore['append']>): Promise<void> {
        if (held) await held;
        return super.append(...args);
      }
    }
    let hookCalled: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => {
      hookCalled = resolve;
    });
    let answerHook: () => void = () => undefined;
    const answer = new Promise<undefined>((resolve) => {
      answerHook = () => resolve(undefined);
    });
    const harness = createHarness();
    const gate = gates();
    harness.registry.register(gate.tool);
    const store = new HeldStore();
    const engine = dagEngine({
      tools: harness.registry,
      store,
      onStepFailed: () => {
        hookCalled();
        return answer;
      },
    });
    const plan = makePlan([
      { id: 'a', tool: 'flaky', args: { failures: 1, retryable: false }, critical: false },
      { id: 'b', tool: 'echo', args: { value: 'b' }, dependsOn: ['a'] },
      { id: 'c', tool: 'gate', args: { name: 'c' } },
    ]);
    const handle = engine.run(plan);
    await asked;
    held = new Promise<void>((resolve) => {
      releaseAppends = resolve;
    });
    const revising = handle.revise({ edits: [{ op: 'remove', stepId: 'b' }], by: 'alice' });
    await new Promise((resolve) => setImmediate(resolve));
    // The hook answers while plan-revise waits for the store: a's failure becomes final now.
    answerHook();
    await new Promise((resolve) => setImmediate(resolve));
    held = undefined;
    releaseAppends();
    await revising;
    gate.open('c');
    const result = await handle.result;

    expect(result.steps.map((step) => `${step.stepId}:${step.status}`).sort()).toEqual(['a:failed', 'c:succeeded']);
    const events = await storedEvents(store, result.runId);
    expect(
      events.filter((event) => event.type === 'step-end').map((event) => (event as { stepId: string }).stepId),
    ).not.toContain('b');
    expect([...foldRun(events).steps.keys()].sort()).toEqual(['a', 'c']);
  });

  it('journals an insert that cannot apply (an id already taken) and applies the default failure policy', async () => {
    const { store, engine, ran } = setup({
      onStepFailed: () => ({ action: 'insert', steps: [{ id: 'after', tool: 'echo', args: {} }] }),
    });
    const plan = makePlan([
      { id: 'test', tool: 'fail', args: {} },
      { id: 'after', tool: 'echo', args: {}, dependsOn: ['test'] },
    ]);
    const result = await engine.run(plan).result;
    expect(result.status).toBe('failed');
    expect(ran()).toEqual(['test']);
    const decision = ofType(await storedEvents(store, result.runId), 'recovery-decision')[0];
    expect(decision?.error?.code).toBe(ErrorCodes.PLAN_INVALID);
  });
});
