import { describe, expect, it } from 'vitest';
import type { StepResult } from '../journal/events.js';
import { createTestTools, makePlan } from '../testing/fixtures.js';
import { AttemptRunner, type AttemptRunnerParts } from './attempt-runner.js';
import type { Queued } from './run-loop.js';
import { openTestSession } from './test-session.js';

const plan = makePlan([
  { id: 'ok', tool: 'echo', args: { value: 1 } },
  { id: 'broken', tool: 'fail', args: { message: 'no' } },
]);

/** A runner whose gate, loop and failure policy record what the runner asks of them, in order. */
async function open(options: { admit?: boolean | Promise<boolean>; final?: boolean } = {}) {
  const { registry } = createTestTools();
  const session = await openTestSession(plan, { tools: registry });
  const { board, journal, control, observer, policy } = session;
  const calls: string[] = [];
  const parts: AttemptRunnerParts = {
    board,
    kernel: { runId: journal.runId, journal, registry, signal: control.signal },
    policy,
    control,
    observer,
    gate: { admit: () => options.admit ?? true },
    loop: {
      free: (queued) => calls.push(`free ${queued.slot.step.id}`),
      advance: (slot, result) => calls.push(`advance ${slot.step.id} ${result.status}`),
    },
    failures: {
      isFinal: () => options.final ?? true,
      recover: async (slot: { step: { id: string } }, result: StepResult) => {
        calls.push(`recover ${slot.step.id} ${result.status}`);
      },
    },
    adjust: undefined,
    resumed: undefined,
  };
  const queued = (index: number): Queued => ({
    index,
    tool: undefined,
    toolLimit: 0,
    slot: board.slot(index),
    attempt: 1,
  });
  return { session, runner: new AttemptRunner(parts), calls, queued };
}

describe('AttemptRunner', () => {
  it('runs an admitted step and advances it inside its slot, so its dependents queue before the slot frees', async () => {
    const { session, runner, calls, queued } = await open();
    await runner.run(queued(0));
    expect(calls).toEqual(['advance ok succeeded', 'free ok']);
    expect(session.board.slot(0)).toMatchObject({ claimed: true, attempt: 1, status: 'running' });
    expect(session.board.running).toBe(0);
  });

  it('hands a final failure to the failure policy before the slot frees, and any other failure after', async () => {
    const final = await open({ final: true });
    await final.runner.run(final.queued(1));
    expect(final.calls).toEqual(['recover broken failed', 'free broken']);
    const retryable = await open({ final: false });
    await retryable.runner.run(retryable.queued(1));
    expect(retryable.calls).toEqual(['free broken', 'recover broken failed']);
  });

  it('only frees the slot of a step the gate did not admit, or one a revision removed', async () => {
    const refused = await open({ admit: Promise.resolve(false) });
    await refused.runner.run(refused.queued(0));
    expect(refused.calls).toEqual(['free ok']);
    expect(refused.session.board.slot(0).attempt).toBe(0);
    const removed = await open();
    removed.session.board.slot(0).removed = true;
    await removed.runner.run(removed.queued(0));
    expect(removed.calls).toEqual(['free ok']);
    expect(removed.session.board.slot(0).claimed).toBe(false);
    expect((await removed.session.events()).some((event) => event.type === 'step-start')).toBe(false);
  });
});
