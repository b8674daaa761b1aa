import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import { invokeStep } from '../kernel/invoke-step.js';
import type { Plan } from '../plan/plan-schema.js';
import { reopenRun, startRun } from '../run/run-session.js';
import {
  expectCode,
  resumeInput,
  runStartInput,
  type StoreHarness,
  samplePlan,
  stamp,
  storeRunner,
  uniqueRunId,
} from './conformance-support.js';
import { createTestTools } from './fixtures.js';

/** One owner at a time, fencing tokens, expiry, single-winner resume. */
export function leaseCases(harness: StoreHarness): void {
  const withStore = storeRunner(harness);

  describe('store conformance: leases', () => {
    it('gives a run to one owner at a time and fences stale writers (E501, whatever their seq)', () =>
      withStore(oneOwnerAtATime));
    it('lets another owner take an expired lease', () => withStore(expiredLeaseIsTaken));
    it('refuses a lease request it cannot date with E004, and the run stays free', () =>
      withStore(refusesUndatableLeaseRequests));
    it('lets exactly one of two concurrent resumes win', () => withStore(oneOfTwoResumesWins));
  });
}

async function oneOwnerAtATime(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  const first = await store.acquireLease(runId, 'owner-a', 60_000);
  expect(first).toBeDefined();
  expect(await store.acquireLease(runId, 'owner-b', 60_000)).toBeUndefined();
  await store.append(runId, stamp(runId, 1, [runStartInput()]), first);
  await expectCode(store.append(runId, stamp(runId, 2, [resumeInput('x')])), ErrorCodes.LEASE_CONFLICT);
  const renewed = await store.renewLease(first as NonNullable<typeof first>);
  expect(renewed.token).toBe(first?.token);
  await store.releaseLease(renewed);
  const second = await store.acquireLease(runId, 'owner-b', 60_000);
  expect(second?.token).toBeGreaterThan(first?.token ?? Number.POSITIVE_INFINITY);
  await expectCode(store.append(runId, stamp(runId, 2, [resumeInput('a')]), renewed), ErrorCodes.LEASE_CONFLICT);
  await expectCode(store.renewLease(renewed), ErrorCodes.LEASE_CONFLICT);
  await store.append(runId, stamp(runId, 2, [resumeInput('b')]), second);
  // A writer that lost the run learns that, not that its seq is taken: E501 before E502.
  await expectCode(store.append(runId, stamp(runId, 2, [resumeInput('late')]), renewed), ErrorCodes.LEASE_CONFLICT);
  expect((await readAll(store, runId)).length).toBe(2);
  return undefined;
}

async function expiredLeaseIsTaken(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  const stale = await store.acquireLease(runId, 'owner-a', 1);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const taken = await store.acquireLease(runId, 'owner-b', 60_000);
  expect(taken).toBeDefined();
  await expectCode(store.append(runId, stamp(runId, 1, [runStartInput()]), stale), ErrorCodes.LEASE_CONFLICT);
  return undefined;
}

async function refusesUndatableLeaseRequests(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  const bad: [unknown, unknown, unknown][] = [
    [runId, 'me', Number.NaN],
    [runId, 'me', -5],
    [runId, 'me', Number.POSITIVE_INFINITY],
    [runId, 'me', 1e15],
    [runId, 'me', '60000'],
    [runId, undefined, 60_000],
    ['', 'me', 60_000],
  ];
  for (const [id, owner, ttl] of bad) {
    await expectCode(store.acquireLease(id as string, owner as string, ttl as number), ErrorCodes.INPUT_INVALID);
  }
  const lease = await store.acquireLease(runId, 'me', 60_000);
  expect(lease?.owner).toBe('me');
  const held = lease as NonNullable<typeof lease>;
  await expectCode(store.renewLease({ ...held, ttlMs: Number.NaN }), ErrorCodes.INPUT_INVALID);
  expect((await store.renewLease(held)).token).toBe(held.token);
  return undefined;
}

async function oneOfTwoResumesWins(store: RunStore): Promise<undefined> {
  const { registry } = createTestTools();
  const runId = uniqueRunId();
  const journal = await startRun({ store, runId, plan: samplePlan, engine: 'test' });
  await invokeStep(
    samplePlan.steps[0] as Plan['steps'][0],
    { attempt: 1, references: 'literal' },
    { runId, journal, registry },
  );
  await journal.close();
  const attempts = await Promise.allSettled([
    reopenRun({ store, runId, owner: 'resumer-1' }),
    reopenRun({ store, runId, owner: 'resumer-2' }),
  ]);
  const winners = attempts.filter((attempt) => attempt.status === 'fulfilled');
  const losers = attempts.filter((attempt) => attempt.status === 'rejected');
  expect(winners.length).toBe(1);
  expect((losers[0] as PromiseRejectedResult).reason.code).toBe(ErrorCodes.LEASE_CONFLICT);
  const winner = (winners[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof reopenRun>>>).value;
  expect(winner.run.steps.get('a')?.status).toBe('succeeded');
  await winner.journal.record(resumeInput('winner'));
  await winner.journal.close();
  return undefined;
}
