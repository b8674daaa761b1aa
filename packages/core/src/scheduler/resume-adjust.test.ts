import { describe, expect, it } from 'vitest';
import { createPolicyEngine, journaledPolicy, permissivePolicy, policyFromJournal } from '../engine.js';
import type { RunEvent, StepResult } from '../journal/events.js';
import { readAll } from '../journal/run-store.js';
import type { Step } from '../plan/plan-schema.js';
import { MemoryStore } from '../store/memory-store.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import type { AdjustHook } from './policies/adjust-hook.js';

/**
 * The code agent's shape: a planning step whose adjustment adds the planned steps as a revision.
 * A crash after the planning step's `step-end` and before its `adjust-decision` must not leave a
 * run that resumes as completed with nothing carried out.
 */
const plan = makePlan([
  { id: 'plan', tool: 'echo', args: { value: ['build', 'check'] } },
  { id: 'notes', tool: 'echo', args: { value: 'independent' } },
]);
const planned: Step[] = [
  { id: 'build', tool: 'echo', args: { value: 'built' }, dependsOn: ['plan'] },
  { id: 'check', tool: 'echo', args: { value: 'checked' }, dependsOn: ['build'] },
];

/** The hook of a planning engine; `asked` records every step it was asked about, with its status. */
type Answer = (step: Step, result: StepResult) => ReturnType<AdjustHook>;

function planningHook(answer?: Answer) {
  const asked: string[] = [];
  const hook: AdjustHook = (step, result) => {
    asked.push(`${step.id}:${result.status}`);
    const own = answer?.(step, result);
    if (own !== undefined) return own;
    if (step.id !== 'plan' || result.status !== 'succeeded') return { action: 'continue' };
    return { action: 'revise', edits: planned.map((each) => ({ op: 'add' as const, step: each })) };
  };
  return { hook, asked };
}

interface EngineExtras {
  readonly concurrency?: number;
  readonly retry?: { maxAttempts: number; initialDelayMs: number; factor: number };
  /** `run-start` as a journal written before it recorded `adjust` (or by an engine journaling other options). */
  readonly withoutAdjustKey?: boolean;
}

function engineOn(store: MemoryStore, hook: AdjustHook | undefined, extras: EngineExtras = {}) {
  const { registry, log } = createTestTools();
  const policy = permissivePolicy({
    tools: registry,
    concurrency: extras.concurrency ?? 1,
    ...(extras.retry ? { retry: extras.retry } : {}),
    ...(hook ? { adjust: hook } : {}),
  });
  const { adjust: _recorded, ...withoutAdjust } = journaledPolicy(policy);
  const engine = createPolicyEngine({
    policy,
    options: { tools: registry, store },
    journaledOptions: extras.withoutAdjustKey ? withoutAdjust : journaledPolicy(policy),
    policyFromJournal: (journaled) => policyFromJournal(journaled, policy),
  });
  return { engine, log };
}

const runId = 'run_resume_adjust';

/** A whole run of `plan` under `hook`, its journal read back. */
async function journalOf(hook: AdjustHook | undefined): Promise<RunEvent[]> {
  const store = new MemoryStore();
  const result = await engineOn(store, hook).engine.run(plan, { runId }).result;
  expect(result.status).toBe('completed');
  return readAll(store, runId);
}

/** A store holding `events` up to and including the first that `cut` matches: what a crash leaves. */
async function cutAfter(events: readonly RunEvent[], cut: (event: RunEvent) => boolean): Promise<MemoryStore> {
  const index = events.findIndex(cut);
  expect(index).toBeGreaterThan(0);
  const store = new MemoryStore();
  await store.append(runId, events.slice(0, index + 1));
  return store;
}

const isEnd = (stepId: string) => (event: RunEvent) => event.type === 'step-end' && event.stepId === stepId;
const decisionsIn = (events: readonly RunEvent[]) =>
  events.flatMap((event) => (event.type === 'adjust-decision' ? [`${event.stepId}:${event.decision}`] : []));

describe('resume after a crash between a step-end and its adjust decision', () => {
  it('asks the hook once for the step, applies its revision, and carries out the new steps', async () => {
    const full = await journalOf(planningHook().hook);
    expect(decisionsIn(full)).toEqual(['plan:revise', 'notes:continue', 'build:continue', 'check:continue']);
    const store = await cutAfter(full, isEnd('plan'));
    const { hook, asked } = planningHook();
    const { engine, log } = engineOn(store, hook);
    const result = await engine.resume(runId).result;
    expect(asked).toEqual(['plan:succeeded', 'notes:succeeded', 'build:succeeded', 'check:succeeded']);
    expect(result.status).toBe('completed');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['plan', 'succeeded'],
      ['notes', 'succeeded'],
      ['build', 'succeeded'],
      ['check', 'succeeded'],
    ]);
    // The planning step ran before the crash only; the planned steps ran after the resume.
    expect(log.calls.map((call) => call.stepId)).toEqual(['notes', 'build', 'check']);
    const events = await readAll(store, runId);
    const resumeAt = events.findIndex((event) => event.type === 'run-resume');
    const after = events.slice(resumeAt);
    expect(decisionsIn(after)).toEqual(['plan:revise', 'notes:continue', 'build:continue', 'check:continue']);
    // The decision comes before anything else the resumed session runs, its revision right after it.
    expect(after.slice(1, 3).map((event) => event.type)).toEqual(['adjust-decision', 'plan-revise']);
    expect(result.plan?.steps.map((step) => step.id)).toEqual(['plan', 'notes', 'build', 'check']);
  });

  it('never asks again about a step whose decision was journaled', async () => {
    const full = await journalOf(planningHook().hook);
    const store = await cutAfter(full, (event) => event.type === 'plan-revise');
    const { hook, asked } = planningHook();
    const { engine, log } = engineOn(store, hook);
    const result = await engine.resume(runId).result;
    expect(result.status).toBe('completed');
    expect(asked).toEqual(['notes:succeeded', 'build:succeeded', 'check:succeeded']);
    expect(log.calls.map((call) => call.stepId)).toEqual(['notes', 'build', 'check']);
    // A second resume of the ended run replays it: nobody is asked.
    const replayed = await engine.resume(runId).result;
    expect(replayed.status).toBe('completed');
    expect(asked).toHaveLength(3);
  });

  it('asks about a step the resume finishes from its journaled tool result', async () => {
    const full = await journalOf(planningHook().hook);
    const store = await cutAfter(full, (event) => event.type === 'tool-result' && event.stepId === 'plan');
    const { hook, asked } = planningHook();
    const result = await engineOn(store, hook).engine.resume(runId).result;
    // Asked once about it; `notes`, independent and never run before the crash, may be asked first.
    expect(asked.filter((each) => each.startsWith('plan:'))).toEqual(['plan:succeeded']);
    expect(result.steps.map((step) => step.stepId)).toEqual(['plan', 'notes', 'build', 'check']);
    expect(decisionsIn(await readAll(store, runId)).filter((each) => each.startsWith('plan'))).toEqual(['plan:revise']);
  });

  it('asks about a failed step whose failure stands, and its revision keeps the run going', async () => {
    const failing = makePlan([
      { id: 'plan', tool: 'fail', args: { message: 'no plan' } },
      { id: 'notes', tool: 'echo', args: { value: 'independent' } },
    ]);
    const store = new MemoryStore();
    const first = await engineOn(store, planningHook().hook).engine.run(failing, { runId }).result;
    expect(first.status).toBe('failed');
    const cut = await cutAfter(await readAll(store, runId), isEnd('plan'));
    const replan: Answer = (step, result) =>
      step.id === 'plan' && result.status === 'failed'
        ? { action: 'revise', edits: [{ op: 'add', step: { id: 'fallback', tool: 'echo', args: {} } }] }
        : undefined;
    const { hook, asked } = planningHook(replan);
    const result = await engineOn(cut, hook).engine.resume(runId).result;
    expect(asked).toEqual(['plan:failed', 'notes:succeeded', 'fallback:succeeded']);
    // Revised after its failure, the critical step no longer fails the run.
    expect(result.status).toBe('partial');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['plan', 'failed'],
      ['notes', 'succeeded'],
      ['fallback', 'succeeded'],
    ]);
  });

  it('asks nothing about steps of a run that had no hook', async () => {
    const full = await journalOf(undefined);
    expect(full[0]).toMatchObject({ type: 'run-start', options: { adjust: false } });
    const store = await cutAfter(full, isEnd('plan'));
    const { hook, asked } = planningHook();
    const result = await engineOn(store, hook).engine.resume(runId).result;
    // Only the step that ends in the resumed session is asked about.
    expect(asked).toEqual(['notes:succeeded']);
    expect(result.steps.map((step) => step.stepId)).toEqual(['plan', 'notes']);
  });

  it('carries on a stop the hook decided before the crash, asking nothing again', async () => {
    const stopping = planningHook((step) => (step.id === 'plan' ? { action: 'stop', reason: 'enough' } : undefined));
    const store = new MemoryStore();
    const stopped = await engineOn(store, stopping.hook).engine.run(plan, { runId }).result;
    expect(stopped.status).toBe('cancelled');
    const full = await readAll(store, runId);
    const cut = await cutAfter(full, (event) => event.type === 'adjust-decision');
    const { hook, asked } = planningHook();
    const { engine, log } = engineOn(cut, hook);
    const result = await engine.resume(runId).result;
    expect(asked).toEqual([]);
    expect(log.calls).toEqual([]);
    expect(result.status).toBe('cancelled');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['plan', 'succeeded'],
      ['notes', 'cancelled'],
    ]);
  });
});

/** A hook recording `step:status:attempt` for every step it is asked about; it continues. */
function recordingHook(delayMs = 0) {
  const asked: string[] = [];
  const hook: AdjustHook = async (step, result) => {
    asked.push(`${step.id}:${result.status}:a${result.attempt}`);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return { action: 'continue' };
  };
  return { hook, asked };
}

describe("resume after a crash between a failed attempt's end and its retry", () => {
  const flaky = makePlan([
    { id: 'flaky', tool: 'fail', args: { retryable: true }, critical: false },
    { id: 'after', tool: 'echo', args: { value: 1 }, dependsOn: ['flaky'] },
  ]);
  const retry = { maxAttempts: 3, initialDelayMs: 1, factor: 1 };

  it('runs the attempts left, then asks the hook once, about the last attempt', async () => {
    const store = new MemoryStore();
    const first = recordingHook();
    const full = await engineOn(store, first.hook, { retry }).engine.run(flaky, { runId }).result;
    expect(full.status).toBe('partial');
    expect(first.asked).toEqual(['flaky:failed:a3']);
    const events = await readAll(store, runId);
    const cutAt = events.findIndex(isEnd('flaky'));
    // `step-end` is durable before `step-retry`: the cut keeps attempt 1's end and nothing after it.
    expect(events[cutAt + 1]).toMatchObject({ type: 'step-retry', attempt: 1 });
    const cut = await cutAfter(events, isEnd('flaky'));
    const { hook, asked } = recordingHook();
    const { engine, log } = engineOn(cut, hook, { retry });
    const result = await engine.resume(runId).result;
    expect(log.calls.map((call) => `${call.stepId}:${call.attempt}`)).toEqual(['flaky:2', 'flaky:3']);
    expect(asked).toEqual(['flaky:failed:a3']);
    expect(result.steps.map((step) => `${step.stepId}:${step.status}:a${step.attempt}`)).toEqual([
      'flaky:failed:a3',
      'after:skipped:a0',
    ]);
    const after = (await readAll(cut, runId)).filter((event) => event.type === 'step-retry');
    expect(after.map((event) => (event.type === 'step-retry' ? event.nextAttempt : 0))).toEqual([2, 3]);
  });
});

describe('resume of a journal whose run-start does not say whether the run asked an adjust hook', () => {
  const three = makePlan([
    { id: 'a', tool: 'echo', args: { value: 1 } },
    { id: 'b', tool: 'echo', args: { value: 2 } },
    { id: 'c', tool: 'echo', args: { value: 3 } },
  ]);

  it('asks nothing about steps that ended before the crash when the session journaled no decision', async () => {
    const store = new MemoryStore();
    await engineOn(store, undefined, { withoutAdjustKey: true }).engine.run(three, { runId }).result;
    const events = await readAll(store, runId);
    expect(events[0]).toMatchObject({ type: 'run-start' });
    expect(events[0]?.type === 'run-start' && events[0].options).not.toHaveProperty('adjust');
    const cut = await cutAfter(events, isEnd('b'));
    const { hook, asked } = recordingHook();
    const result = await engineOn(cut, hook).engine.resume(runId).result;
    expect(result.status).toBe('completed');
    expect(asked).toEqual(['c:succeeded:a1']);
  });

  it('asks about the step a crash cut off when the session journaled a decision', async () => {
    const store = new MemoryStore();
    const first = recordingHook();
    await engineOn(store, first.hook, { withoutAdjustKey: true }).engine.run(three, { runId }).result;
    expect(first.asked).toEqual(['a:succeeded:a1', 'b:succeeded:a1', 'c:succeeded:a1']);
    const cut = await cutAfter(await readAll(store, runId), isEnd('b'));
    const { hook, asked } = recordingHook();
    const { engine, log } = engineOn(cut, hook);
    const result = await engine.resume(runId).result;
    expect(result.status).toBe('completed');
    expect(asked).toEqual(['b:succeeded:a1', 'c:succeeded:a1']);
    expect(log.calls.map((call) => call.stepId)).toEqual(['c']);
  });
});

describe('resume asks every cut-off adjustment before anything else runs', () => {
  const pairs = makePlan([
    { id: 'a', tool: 'echo', args: { value: 1 } },
    { id: 'b', tool: 'echo', args: { value: 2 } },
    { id: 'after-a', tool: 'echo', args: { value: 3 }, dependsOn: ['a'] },
    { id: 'after-b', tool: 'echo', args: { value: 4 }, dependsOn: ['b'] },
  ]);

  /** A journal with both `a` and `b` ended and neither decided: the first session's hook never answers. */
  async function bothUndecided(): Promise<MemoryStore> {
    const store = new MemoryStore();
    const silent: AdjustHook = (_step, _result, context) =>
      new Promise((resolve) => context.signal.addEventListener('abort', () => resolve(undefined)));
    const handle = engineOn(store, silent, { concurrency: 2 }).engine.run(pairs, { runId });
    let events: RunEvent[] = [];
    for (let tries = 0; tries < 200; tries++) {
      events = await readAll(store, runId);
      if (events.filter((event) => event.type === 'step-end').length === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const cut = new MemoryStore();
    await cut.append(runId, events);
    handle.cancel();
    await handle.result;
    return cut;
  }

  it('journals both decisions before any dependent starts (concurrency 2), a revision among them', async () => {
    const cut = await bothUndecided();
    const recording = recordingHook(30);
    // `a`'s revision releases the steps it did not start (a new board): none may run before `b` is decided.
    const hook: AdjustHook = (step, result, context) =>
      step.id === 'a'
        ? { action: 'revise', edits: [{ op: 'add', step: { id: 'noted', tool: 'echo', args: {}, dependsOn: ['a'] } }] }
        : recording.hook(step, result, context);
    const result = await engineOn(cut, hook, { concurrency: 2 }).engine.resume(runId).result;
    expect(result.status).toBe('completed');
    expect(recording.asked[0]).toBe('b:succeeded:a1');
    const events = await readAll(cut, runId);
    const resumeAt = events.findIndex((event) => event.type === 'run-resume');
    const after = events
      .slice(resumeAt + 1)
      .map((event) => ('stepId' in event ? `${event.type}:${event.stepId}` : event.type));
    expect(after.slice(0, 3)).toEqual(['adjust-decision:a', 'plan-revise', 'adjust-decision:b']);
    expect(after.filter((each) => each.startsWith('step-start')).sort()).toEqual([
      'step-start:after-a',
      'step-start:after-b',
      'step-start:noted',
    ]);
  });

  it('applies a host revision only once the cut-off decisions are journaled', async () => {
    const cut = await bothUndecided();
    const { hook } = recordingHook(30);
    const handle = engineOn(cut, hook, { concurrency: 2 }).engine.resume(runId);
    const revised = handle.revise({ edits: [{ op: 'add', step: { id: 'extra', tool: 'echo', args: {} } }] });
    await revised;
    const result = await handle.result;
    expect(result.status).toBe('completed');
    const events = await readAll(cut, runId);
    const resumeAt = events.findIndex((event) => event.type === 'run-resume');
    const types = events.slice(resumeAt + 1).map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(['adjust-decision', 'adjust-decision']);
    expect(types.filter((type) => type === 'plan-revise')).toHaveLength(1);
    expect(result.plan?.steps.map((step) => step.id)).toContain('extra');
  });
});
