import { describe, expect, it } from 'vitest';
import type { StepError } from '../errors.js';
import type { RunEventInput, StepResult } from '../journal/events.js';
import { foldRun } from '../journal/fold-run.js';
import { readAll } from '../journal/run-store.js';
import { deriveExecutionId } from '../plan/plan-digest.js';
import { startRun } from '../run/run-session.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { restoreSteps } from './resume-state.js';

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
    const { steps, interrupted } = restoreSteps(run, events, false);
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
    const { steps } = restoreSteps(run, events, true);
    expect(steps.get('written')).toMatchObject({ action: 'rerun' });
  });
});
