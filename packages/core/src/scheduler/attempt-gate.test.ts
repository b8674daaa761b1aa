import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCodes, type StepError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import { AttemptGate } from './attempt-gate.js';
import type { EnginePolicy } from './engine-policy.js';
import { TURN_EVERY_MS } from './event-loop-turn.js';
import { openTestSession, type TestSession, testPolicy } from './test-session.js';

const pair = makePlan([
  { id: 'a', tool: 'echo' },
  { id: 'b', tool: 'echo', dependsOn: ['a'], args: { value: { $ref: 'a', pointer: '/value' } } },
]);

function gateFor(session: TestSession, now?: () => number): AttemptGate {
  const { board, journal, control, observer, policy, loop } = session;
  return new AttemptGate({ board, journal, control, observer, policy, loop, ...(now ? { now } : {}) });
}

const retryable: StepError = { code: 'E301', message: 'flaky', retryable: true };

afterEach(() => {
  vi.useRealTimers();
});

describe('AttemptGate.admit', () => {
  it('admits at once, without a promise, when nothing has to be waited for', async () => {
    const session = await openTestSession(pair, { durability: 'batched' });
    expect(gateFor(session).admit(session.board.slot(0))).toBe(true);
  });

  it('owes the event loop a turn once the run has kept the thread for TURN_EVERY_MS, then runs free again', async () => {
    const session = await openTestSession(pair, { durability: 'batched' });
    let now = 1000;
    const gate = gateFor(session, () => now);
    const slot = session.board.slot(0);
    expect(gate.admit(slot)).toBe(true);
    now += TURN_EVERY_MS - 1;
    expect(gate.admit(slot)).toBe(true);
    now += 1;
    const waiting = gate.admit(slot);
    expect(waiting).toBeInstanceOf(Promise);
    await expect(waiting).resolves.toBe(true);
    expect(gate.admit(slot)).toBe(true);
  });

  it('refuses a step when the run stopped while it waited for its turn', async () => {
    const session = await openTestSession(pair, { durability: 'batched' });
    let now = 0;
    const gate = gateFor(session, () => now);
    gate.admit(session.board.slot(0));
    now = TURN_EVERY_MS;
    const waiting = gate.admit(session.board.slot(0));
    session.control.stop('cancelled', 'the host cancelled');
    await expect(waiting).resolves.toBe(false);
    expect(gate.admit(session.board.slot(0))).toBe(false);
  });

  it("waits for the host's hold, and refuses the step if the run was held by a revision meanwhile", async () => {
    let open: () => void = () => undefined;
    const beforeStep = vi.fn(
      () =>
        new Promise<void>((resolve) => {
          open = resolve;
        }),
    );
    const session = await openTestSession(pair, { durability: 'batched', observer: { beforeStep } });
    const gate = gateFor(session);
    const waiting = gate.admit(session.board.slot(0));
    expect(beforeStep).toHaveBeenCalledWith(pair.steps[0], 0);
    session.control.hold('revision 2 is not approved');
    open();
    await expect(waiting).resolves.toBe(false);
  });

  it('skips (E310) a step whose reference names a step that ended without output, and advances it', async () => {
    const session = await openTestSession(pair, { durability: 'batched' });
    const { board, loop, result } = session;
    const skipped = result('a', 'skipped', {
      error: { code: 'E304', message: 'skipped by a person', retryable: false },
    });
    loop.advance(board.slot(0), skipped);
    expect(gateFor(session).admit(board.slot(1))).toBe(false);
    expect(board.slot(1).result?.status).toBe('skipped');
    const end = (await session.events()).find((event) => event.type === 'step-end' && event.stepId === 'b');
    expect(end).toMatchObject({
      result: {
        status: 'skipped',
        error: {
          code: ErrorCodes.DEPENDENCY_FAILED,
          message: 'step "b" references the output of "a", which was skipped',
          details: { dependency: 'a', reference: true },
        },
      },
    });
  });

  it('passes literal args through: a strict engine never skips for a reference', async () => {
    const session = await openTestSession(pair, {
      durability: 'batched',
      policy: testPolicy({ references: 'literal' }),
    });
    const { board, loop, result } = session;
    loop.advance(board.slot(0), result('a', 'skipped', { error: { code: 'E304', message: 'no', retryable: false } }));
    expect(gateFor(session).admit(board.slot(1))).toBe(true);
  });

  it("under step durability, starts a step only once its dependencies' ends are durable", async () => {
    const session = await openTestSession(pair);
    const { board, journal, loop, result } = session;
    const gate = gateFor(session);
    journal.emit({ type: 'step-end', stepId: 'a', result: result('a', 'succeeded') });
    loop.advance(board.slot(0), result('a', 'succeeded'));
    expect(board.slot(0).endSeq).toBe(journal.lastSeq);
    expect(journal.durableSeq).toBeLessThan(journal.lastSeq);
    await expect(gate.admit(board.slot(1))).resolves.toBe(true);
    expect(journal.durableSeq).toBe(journal.lastSeq);
  });

  it("fails the run when the dependencies' ends cannot be made durable", async () => {
    const store = new FailingStore();
    const session = await openTestSession(pair, { store });
    const { board, journal, loop, result, control } = session;
    journal.emit({ type: 'step-end', stepId: 'a', result: result('a', 'succeeded') });
    loop.advance(board.slot(0), result('a', 'succeeded'));
    store.failing = true;
    await expect(gateFor(session).admit(board.slot(1))).resolves.toBe(false);
    expect(control.fatal?.error).toBeInstanceOf(Error);
    expect(control.stopCause?.kind).toBe('failed');
  });
});

describe('AttemptGate.retryLater', () => {
  async function retrySession(retry: EnginePolicy['retry'] = {}) {
    const plan = makePlan([{ id: 'flaky', tool: 'echo' }]);
    const session = await openTestSession(plan, { policy: testPolicy({ retry }) });
    return { session, gate: gateFor(session), slot: session.board.slot(0) };
  }

  it('journals step-retry, waits out the backoff on the clock, then queues the next attempt', async () => {
    const { session, gate, slot } = await retrySession({ initialDelayMs: 1000, factor: 3, maxAttempts: 3 });
    vi.useFakeTimers();
    const failed = session.result('flaky', 'failed', { attempt: 2, error: retryable });
    const retrying = gate.retryLater(slot, failed, retryable);
    await vi.advanceTimersByTimeAsync(2999);
    expect(slot.status).toBe('retrying');
    expect(session.started).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await expect(retrying).resolves.toBe(true);
    expect(session.started).toEqual([{ stepId: 'flaky', attempt: 3 }]);
    vi.useRealTimers();
    const retry = (await session.events()).find(
      (event): event is Extract<RunEvent, { type: 'step-retry' }> => event.type === 'step-retry',
    );
    expect(retry).toMatchObject({ stepId: 'flaky', attempt: 2, nextAttempt: 3, delayMs: 3000, error: retryable });
  });

  it('does not retry an error that is not retryable, unless the step lists its code in `on`', async () => {
    const fatal: StepError = { code: 'E304', message: 'exit 1', retryable: false };
    const plain = await retrySession();
    const failed = plain.session.result('flaky', 'failed', { error: fatal });
    await expect(plain.gate.retryLater(plain.slot, failed, fatal)).resolves.toBe(false);
    const listed = await retrySession({ initialDelayMs: 0, on: ['E304'] });
    await expect(listed.gate.retryLater(listed.slot, failed, fatal)).resolves.toBe(true);
    expect(listed.session.started).toEqual([{ stepId: 'flaky', attempt: 2 }]);
    expect((await plain.session.events()).some((event) => event.type === 'step-retry')).toBe(false);
  });

  it('does not retry once the attempts are used up, or under a policy that never retries', async () => {
    const used = await retrySession({ maxAttempts: 2 });
    const second = used.session.result('flaky', 'failed', { attempt: 2, error: retryable });
    await expect(used.gate.retryLater(used.slot, second, retryable)).resolves.toBe(false);
    const plan = makePlan([{ id: 'flaky', tool: 'echo', retry: { maxAttempts: 5 } }]);
    const strict = await openTestSession(plan, { policy: testPolicy({ retry: false }) });
    const first = strict.result('flaky', 'failed', { error: retryable });
    await expect(gateFor(strict).retryLater(strict.board.slot(0), first, retryable)).resolves.toBe(false);
  });

  it('queues nothing when the run stops during the backoff', async () => {
    const { session, gate, slot } = await retrySession({ initialDelayMs: 60_000 });
    const failed = session.result('flaky', 'failed', { error: retryable });
    const retrying = gate.retryLater(slot, failed, retryable);
    await new Promise((resolve) => setTimeout(resolve, 10));
    session.control.stop('cancelled', 'the host cancelled');
    await expect(retrying).resolves.toBe(true);
    expect(session.started).toEqual([]);
  });
});

/** A MemoryStore that refuses appends once `failing` is set. */
class FailingStore extends MemoryStore {
  failing = false;

  override async append(...args: Parameters<MemoryStore['append']>): Promise<void> {
    if (this.failing) throw new Error('the disk is full');
    return super.append(...args);
  }
}
