import { describe, expect, it } from 'vitest';
import type { StepError } from '../errors.js';
import type { RunEvent, RunEventInput, StepResult } from '../journal/events.js';
import { foldRun } from '../journal/fold-run.js';
import { readAll } from '../journal/run-store.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import { startRun } from '../run/run-session.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { askedAdjustHook, restoreSteps } from './resume-state.js';

const plan = makePlan([
  { id: 'done', tool: 'echo' },
  { id: 'written', tool: 'note', args: { text: 'x' } },
  { id: 'read', tool: 'echo' },
  { id: 'answered', tool: 'echo' },
  { id: 'backing-off', tool: 'echo' },
  { id: 'retried', tool: 'echo' },
  { id: 'skipped', tool: 'echo' },
  { id: 'aborted', tool: 'echo' },
  { id: 'goal' },
  { id: 'untouched', tool: 'echo' },
]);
const runId = 'run_resume_state';
const broken: StepError = { code: 'E304', message: 'exit 1', retryable: false };

function result(stepId: string, status: StepResult['status'], extra: Partial<StepResult> = {}): StepResult {
  const step = plan.steps.find((each) => each.id === stepId);
  return {
    stepId,
    tool: step?.tool,
    status,
    executionId: deriveExecutionId(runId, stepId, 1),
    attempt: 1,
    startedAt: new Date(0).toISOString(),
    durationMs: 5,
    ...extra,
  };
}

function started(stepId: string, tool: string | undefined): RunEventInput {
  return { type: 'step-start', stepId, tool, attempt: 1, executionId: deriveExecutionId(runId, stepId, 1) };
}

function called(stepId: string, tool: string, idempotent: boolean): RunEventInput {
  const executionId = deriveExecutionId(runId, stepId, 1);
  return { type: 'tool-call', stepId, executionId, attempt: 1, tool, effect: 'read', idempotent, args: {} };
}

/** A journal a crash cut short, read back and folded as a resume does. */
async function crashedRun() {
  const store = new MemoryStore();
  const journal = await startRun({ store, runId, plan, engine: 'dag' });
  const inputs: RunEventInput[] = [
    started('done', 'echo'),
    { type: 'step-end', stepId: 'done', result: result('done', 'succeeded', { output: { value: 1 } }) },
    started('written', 'note'),
    called('written', 'note', false),
    started('read', 'echo'),
    called('read', 'echo', true),
    started('answered', 'echo'),
    called('answered', 'echo', true),
    {
      type: 'tool-result',
      stepId: 'answered',
      executionId: deriveExecutionId(runId, 'answered', 1),
      tool: 'echo',
      status: 'succeeded',
      output: { value: 'kept' },
      startedAt: new Date(0).toISOString(),
      durationMs: 7,
    },
    started('backing-off', 'echo'),
    { type: 'step-retry', stepId: 'backing-off', attempt: 1, nextAttempt: 2, delayMs: 1000, error: broken },
  ];
  for (const [stepId, decision] of [
    ['retried', 'retry'],
    ['skipped', 'skip'],
    ['aborted', 'abort'],
  ] as const) {
    inputs.push(started(stepId, 'echo'));
    inputs.push({ type: 'step-end', stepId, result: result(stepId, 'failed', { error: broken }) });
    inputs.push({
      type: 'recovery-decision',
      stepId,
      attempt: 1,
      decision,
      ...(decision === 'retry' ? { args: { value: 'fixed' } } : {}),
      ...(decision === 'skip' ? { reason: 'optional' } : {}),
    });
  }
  inputs.push(started('goal', undefined));
  for (const input of inputs) journal.emit(input);
  await journal.flush();
  await journal.close();
  const events = await readAll(store, runId);
  return { run: foldRun(events, runId), events };
}

describe('restoreSteps', () => {
  it('turns each step of a crashed journal into what the resumed session does with it', async () => {
    const { run, events } = await crashedRun();
    const { steps, interrupted } = restoreSteps(run, events, { allowRerun: false });
    expect(steps.get('done')).toMatchObject({ attempt: 1, result: { status: 'succeeded', output: { value: 1 } } });
    expect(steps.get('written')).toMatchObject({ attempt: 1, action: 'fail' });
    expect(steps.get('read')).toMatchObject({ attempt: 1, action: 'rerun' });
    expect(steps.get('answered')).toMatchObject({
      action: 'finish',
      toolResult: { status: 'succeeded', output: { value: 'kept' } },
    });
    expect(steps.get('backing-off')).toMatchObject({ attempt: 1, action: 'retry' });
    expect(steps.get('retried')).toMatchObject({ action: 'retry', args: { value: 'fixed' } });
    expect(steps.get('skipped')).toMatchObject({ action: 'skip', reason: 'optional', failure: { status: 'failed' } });
    expect(steps.get('aborted')).toMatchObject({ aborted: true, result: { status: 'failed' } });
    expect(steps.get('goal')).toMatchObject({ attempt: 1, action: 'rerun', continueAttempt: true });
    expect(steps.get('untouched')).toEqual({ attempt: 0, args: undefined });
    expect(interrupted).toEqual([
      { stepId: 'written', action: 'fail' },
      { stepId: 'read', action: 'rerun' },
      { stepId: 'answered', action: 'finish' },
      { stepId: 'goal', action: 'rerun' },
    ]);
  });

  it('runs a non-idempotent step again when the host allows re-runs', async () => {
    const { run, events } = await crashedRun();
    const { steps } = restoreSteps(run, events, { allowRerun: true });
    expect(steps.get('written')).toMatchObject({ action: 'rerun' });
  });

  it('asks the adjust hook again only about ends of the crashed session with no decision after them', async () => {
    const { run, events } = await crashedRun();
    const { steps } = restoreSteps(run, events, { allowRerun: false, adjusts: true });
    expect(steps.get('done')).toMatchObject({ action: 'adjust', ended: { status: 'succeeded' } });
    expect(steps.get('done')?.result).toBeUndefined();
    // The recovery hook's decisions came instead of an adjustment: abort, retry and skip are not asked.
    expect(steps.get('aborted')).toMatchObject({ aborted: true, result: { status: 'failed' } });
    expect(steps.get('retried')).toMatchObject({ action: 'retry' });
    expect(steps.get('skipped')).toMatchObject({ action: 'skip' });
    // Without a hook (or for a run journaled without one) nothing is asked.
    expect(restoreSteps(run, events, { allowRerun: false }).steps.get('done')).toMatchObject({ result: {} });
  });

  it('leaves alone the ends of a session that ended, and a decision journaled after an end', async () => {
    const twoSteps = makePlan([
      { id: 'first', tool: 'echo' },
      { id: 'second', tool: 'echo' },
      { id: 'third', tool: 'echo' },
    ]);
    const store = new MemoryStore();
    const journal = await startRun({ store, runId, plan: twoSteps, engine: 'dag' });
    const end = (stepId: string, status: StepResult['status'], attempt = 1): RunEventInput => ({
      type: 'step-end',
      stepId,
      result: { ...result(stepId, status, { attempt }), tool: 'echo' },
    });
    const inputs: RunEventInput[] = [
      // The first session: `first` failed while the run was stopping (not asked), the run ended.
      started('first', 'echo'),
      started('second', 'echo'),
      end('second', 'failed'),
      { type: 'adjust-decision', stepId: 'second', attempt: 1, status: 'failed', decision: 'continue' },
      end('first', 'failed'),
      { type: 'run-end', status: 'failed', durationMs: 5 },
      { type: 'run-continue', from: 'failed', retry: ['second'], skip: [] },
      // The continuation: `second` succeeds and `third` too, then a crash before `second`'s decision.
      { type: 'step-start', stepId: 'second', tool: 'echo', attempt: 2, executionId: 'ex_second_2' },
      end('second', 'succeeded', 2),
      started('third', 'echo'),
      end('third', 'succeeded'),
      { type: 'adjust-decision', stepId: 'third', attempt: 1, status: 'succeeded', decision: 'continue' },
    ];
    for (const input of inputs) journal.emit(input);
    await journal.flush();
    await journal.close();
    const events = await readAll(store, runId);
    const { steps } = restoreSteps(foldRun(events, runId), events, { allowRerun: false, adjusts: true });
    expect(steps.get('first')).toMatchObject({ result: { status: 'failed' } });
    expect(steps.get('second')).toMatchObject({ action: 'adjust', ended: { status: 'succeeded', attempt: 2 } });
    expect(steps.get('third')).toMatchObject({ result: { status: 'succeeded' } });
  });

  it('tells whether the crashed session asked an adjust hook: run-start says so, else a decision since it began', () => {
    const at = new Date(0).toISOString();
    const common = { runId, at };
    const decision = {
      ...common,
      seq: 3,
      type: 'adjust-decision',
      stepId: 'done',
      attempt: 1,
      status: 'succeeded',
      decision: 'continue',
    } as const;
    const start = {
      ...common,
      seq: 1,
      type: 'run-start',
      planId: plan.id,
      planDigest: 'x',
      engine: 'dag',
      plan,
    } as RunEvent;
    const resume = { ...common, seq: 4, type: 'run-resume', owner: 'me', interrupted: [] } as RunEvent;
    expect(askedAdjustHook({ adjust: true }, [start])).toBe(true);
    expect(askedAdjustHook({ adjust: false }, [start, decision])).toBe(false);
    // No `adjust` key (an older journal): only a decision in the session the crash cut off shows a hook.
    expect(askedAdjustHook({ concurrency: 1 }, [start, decision])).toBe(true);
    expect(askedAdjustHook(undefined, [start, decision])).toBe(true);
    expect(askedAdjustHook(undefined, [start])).toBe(false);
    expect(askedAdjustHook(undefined, [start, decision, resume])).toBe(false);
  });
});
