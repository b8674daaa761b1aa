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

function engineOn(store: MemoryStore, hook: AdjustHook | undefined) {
  const { registry, log } = createTestTools();
  const policy = permissivePolicy({ tools: registry, concurrency: 1, ...(hook ? { adjust: hook } : {}) });
  const engine = createPolicyEngine({
    policy,
    options: { tools: registry, store },
    journaledOptions: journaledPolicy(policy),
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
    expect(asked[0]).toBe('plan:succeeded');
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
