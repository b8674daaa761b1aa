import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { type Lease, type RunStore, readAll } from '../journal/run-store.js';
import { reopenRun, startRun } from '../run/run-session.js';
import {
  expectCode,
  resumeInput,
  runStartInput,
  type StoreHarness,
  samplePlan,
  stamp,
  uniqueRunId,
} from './conformance-support.js';

/** Two handles on one storage (or the same one twice); contender `index` uses `stores[index % 2]`. */
type StorePair = readonly [RunStore, RunStore];

/**
 * Contenders racing for one run, half of them on a second handle of the same storage when the
 * harness can open one (`connect`): the way two worker processes meet.
 */
export function raceCases(harness: StoreHarness): void {
  const withStores = storePairRunner(harness);

  describe('store conformance: concurrency and resume races', () => {
    it('lands exactly one of many appends racing for the same seq', () => withStores(oneAppendTakesTheSeq));
    it('gives a run to exactly one of many owners racing for its lease, with growing tokens', () =>
      withStores(oneOwnerTakesTheLease));
    it('lets exactly one of many resumers win, and fences every loser', () => withStores(oneResumerWins));
    it('fences a writer whose lease expired while the new owner writes, whatever the order', () =>
      withStores(expiredWriterIsFenced));
    it('never leaves two live holders when a renewal races a takeover', () => withStores(renewalRacesTakeover));
  });
}

/** Runs `body` on a new store and a second handle on it (`connect`), closing both. */
function storePairRunner(harness: StoreHarness) {
  return async (body: (stores: StorePair) => Promise<void>) => {
    const first = await harness.create();
    const second = harness.connect ? await harness.connect(first) : first;
    try {
      await body([first, second]);
    } finally {
      if (second !== first) await second.close();
      await first.close();
    }
  };
}

const pick = (stores: StorePair, index: number) => stores[index % 2] as RunStore;

const codeOf = (outcome: PromiseSettledResult<unknown>) =>
  outcome.status === 'rejected' && StepwiseError.isInstance(outcome.reason) ? outcome.reason.code : undefined;

async function oneAppendTakesTheSeq(stores: StorePair): Promise<void> {
  const runId = uniqueRunId();
  await pick(stores, 0).append(runId, stamp(runId, 1, [runStartInput()]));
  const outcomes = await Promise.allSettled(
    Array.from({ length: 8 }, (_, index) =>
      pick(stores, index).append(runId, stamp(runId, 2, [resumeInput(`writer-${index}`)])),
    ),
  );
  expect(outcomes.filter((outcome) => outcome.status === 'fulfilled').length).toBe(1);
  expect(outcomes.filter((outcome) => outcome.status === 'rejected').map(codeOf)).toEqual(
    Array.from({ length: 7 }, () => ErrorCodes.JOURNAL_CONFLICT),
  );
  const events = await readAll(pick(stores, 1), runId);
  expect(events.map((event) => event.seq)).toEqual([1, 2]);
}

async function oneOwnerTakesTheLease(stores: StorePair): Promise<void> {
  const runId = uniqueRunId();
  const tokens: number[] = [];
  for (let round = 0; round < 3; round++) {
    const leases = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        pick(stores, index).acquireLease(runId, `owner-${round}-${index}`, 60_000),
      ),
    );
    const winners = leases.filter((lease): lease is Lease => lease !== undefined);
    expect(winners.length).toBe(1);
    tokens.push((winners[0] as Lease).token);
    await pick(stores, round).releaseLease(winners[0] as Lease);
  }
  expect(tokens[1]).toBeGreaterThan(tokens[0] as number);
  expect(tokens[2]).toBeGreaterThan(tokens[1] as number);
}

async function oneResumerWins(stores: StorePair): Promise<void> {
  const runId = uniqueRunId();
  const journal = await startRun({ store: pick(stores, 0), runId, plan: samplePlan, engine: 'test' });
  await journal.close();
  const attempts = await Promise.allSettled(
    Array.from({ length: 6 }, (_, index) =>
      reopenRun({ store: pick(stores, index), runId, owner: `resumer-${index}` }),
    ),
  );
  const winners = attempts.filter((attempt) => attempt.status === 'fulfilled');
  expect(winners.length).toBe(1);
  expect(attempts.filter((attempt) => attempt.status === 'rejected').map(codeOf)).toEqual(
    Array.from({ length: 5 }, () => ErrorCodes.LEASE_CONFLICT),
  );
  const winner = (winners[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof reopenRun>>>).value;
  await winner.journal.record(resumeInput('winner'));
  await winner.journal.close();
  const events = await readAll(pick(stores, 1), runId);
  expect(events.map((event) => event.type)).toEqual(['run-start', 'run-resume']);
}

async function expiredWriterIsFenced(stores: StorePair): Promise<void> {
  const runId = uniqueRunId();
  const stale = (await pick(stores, 0).acquireLease(runId, 'owner-a', 1)) as Lease;
  await pick(stores, 0).append(runId, stamp(runId, 1, [runStartInput()]), stale);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const fresh = (await pick(stores, 1).acquireLease(runId, 'owner-b', 60_000)) as Lease;
  expect(fresh).toBeDefined();
  const [late, current] = await Promise.allSettled([
    pick(stores, 0).append(runId, stamp(runId, 2, [resumeInput('a')]), stale),
    pick(stores, 1).append(runId, stamp(runId, 2, [resumeInput('b')]), fresh),
  ]);
  expect(codeOf(late as PromiseSettledResult<unknown>)).toBe(ErrorCodes.LEASE_CONFLICT);
  expect(current?.status).toBe('fulfilled');
  await expectCode(pick(stores, 0).renewLease(stale), ErrorCodes.LEASE_CONFLICT);
  const events = await readAll(pick(stores, 0), runId);
  expect(events.map((event) => (event as { owner?: string }).owner)).toEqual([undefined, 'b']);
}

async function renewalRacesTakeover(stores: StorePair): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const runId = uniqueRunId();
    const held = (await pick(stores, 0).acquireLease(runId, 'owner-a', 1)) as Lease;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [, takeover] = await Promise.allSettled([
      pick(stores, 0).renewLease(held),
      pick(stores, 1).acquireLease(runId, 'owner-b', 60_000),
    ]);
    const taken = takeover.status === 'fulfilled' ? takeover.value : undefined;
    if (!taken) continue;
    // Whatever the renewal did first, the old token is dead once the run was taken.
    await expectCode(pick(stores, 0).renewLease(held), ErrorCodes.LEASE_CONFLICT);
    await expectCode(
      pick(stores, 0).append(runId, stamp(runId, 1, [runStartInput()]), held),
      ErrorCodes.LEASE_CONFLICT,
    );
    await pick(stores, 1).append(runId, stamp(runId, 1, [runStartInput()]), taken);
    expect((await readAll(pick(stores, 0), runId)).length).toBe(1);
  }
}
