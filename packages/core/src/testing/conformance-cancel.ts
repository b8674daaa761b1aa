import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import type { RunEndEvent, StepEndEvent } from '../journal/events.js';
import { type CancelRequest, type Lease, type RunStore, readAll } from '../journal/run-store.js';
import { cancelRun } from '../run/cancel-run.js';
import { startRun } from '../run/run-session.js';
import {
  expectCode,
  runStartInput,
  type StoreHarness,
  samplePlan,
  stamp,
  storeRunner,
  uniqueRunId,
} from './conformance-support.js';

/** Cancel requests (`requestCancel`, `Lease.cancelRequest`) and `cancelRun` against the store. */
export function cancelCases(harness: StoreHarness): void {
  const withStore = storeRunner(harness);

  describe('store conformance: cancel', () => {
    it('records a cancel request for a running run and hands it to the holder and to whoever takes the run over', () =>
      withStore((store) => requestReachesHolders(store, harness)));
    it('forgets a request once the run ends, and records none for an ended or unknown run', () =>
      withStore(requestEndsWithRun));
    it('cancelRun asks a live holder, which hears it at its next renewal', () => withStore(cancelReachesLiveHolder));
    it('cancelRun ends a run nobody holds (E508 once ended, E505 unknown)', () => withStore(cancelEndsUnheldRun));
  });
}

const request: CancelRequest = { by: 'conformance', reason: 'proving the store', at: '2026-01-02T03:04:05.000Z' };

async function startedRun(store: RunStore, owner = 'owner-a', ttlMs = 60_000) {
  const runId = uniqueRunId();
  const lease = (await store.acquireLease(runId, owner, ttlMs)) as Lease;
  await store.append(runId, stamp(runId, 1, [runStartInput()]), lease);
  return { runId, lease };
}

async function requestReachesHolders(store: RunStore, harness: StoreHarness): Promise<RunStore> {
  if (!store.requestCancel) return store;
  const { runId, lease } = await startedRun(store, 'owner-a', 200);
  expect((await store.renewLease(lease)).cancelRequest).toBeUndefined();
  expect(await store.requestCancel(runId, request)).toBe(true);
  const renewed = await store.renewLease(lease);
  expect(renewed.cancelRequest).toEqual(request);
  // A holder that stopped renewing: whoever takes the run over next gets the request.
  await new Promise((resolve) => setTimeout(resolve, 250));
  let current = store;
  if (harness.reopen) current = await harness.reopen(store);
  const taken = await current.acquireLease(runId, 'owner-b', 60_000);
  expect(taken?.cancelRequest).toEqual(request);
  return current;
}

async function requestEndsWithRun(store: RunStore): Promise<undefined> {
  if (!store.requestCancel) return undefined;
  expect(await store.requestCancel(uniqueRunId(), request)).toBe(false);
  await expectCode(store.requestCancel(uniqueRunId(), { by: '', at: request.at }), ErrorCodes.INPUT_INVALID);
  const { runId, lease } = await startedRun(store);
  expect(await store.requestCancel(runId, { ...request, by: 'first' })).toBe(true);
  expect(await store.requestCancel(runId, request)).toBe(true);
  expect((await store.renewLease(lease)).cancelRequest).toEqual(request);
  await store.append(runId, stamp(runId, 2, [{ type: 'run-end', status: 'cancelled', durationMs: 1 }]), lease);
  expect((await store.renewLease(lease)).cancelRequest).toBeUndefined();
  expect(await store.requestCancel(runId, request)).toBe(false);
  await store.releaseLease(lease);
  expect((await store.acquireLease(runId, 'owner-b', 60_000))?.cancelRequest).toBeUndefined();
  return undefined;
}

async function cancelReachesLiveHolder(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  const journal = await startRun({ store, runId, plan: samplePlan, engine: 'test', leaseTtlMs: 300 });
  const heard = new Promise<CancelRequest>((resolve) => journal.onCancelRequest(resolve));
  try {
    if (!store.requestCancel) {
      await expectCode(cancelRun(store, runId, { by: 'conformance' }), ErrorCodes.LEASE_CONFLICT);
      return undefined;
    }
    const outcome = await cancelRun(store, runId, { by: 'conformance', reason: 'stop' });
    expect(outcome).toMatchObject({ runId, outcome: 'requested', request: { by: 'conformance', reason: 'stop' } });
    // Renewed every 100 ms: the request arrives with one of the next renewals.
    const started = Date.now();
    expect(await heard).toMatchObject({ by: 'conformance', reason: 'stop' });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(journal.cancelRequest?.by).toBe('conformance');
  } finally {
    await journal.close();
  }
  return undefined;
}

async function cancelEndsUnheldRun(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  const journal = await startRun({ store, runId, plan: samplePlan, engine: 'test' });
  await journal.record({ type: 'step-start', stepId: 'a', tool: 'echo', attempt: 1, executionId: `${runId}-a` });
  // Released without a run-end: a run whose process stopped (or that waits for someone).
  await journal.close();
  const outcome = await cancelRun(store, runId, { by: 'alice', reason: 'not needed' });
  expect(outcome.outcome).toBe('cancelled');
  const events = await readAll(store, runId);
  const ends = events.filter((event): event is StepEndEvent => event.type === 'step-end');
  expect(ends.map((end) => [end.stepId, end.result.status, end.result.error?.code])).toEqual([
    ['a', 'cancelled', ErrorCodes.STEP_CANCELLED],
    ['b', 'cancelled', ErrorCodes.STEP_CANCELLED],
  ]);
  expect(ends[0]?.result.error?.message).toContain('alice asked to cancel the run: not needed');
  const end = events.at(-1) as RunEndEvent;
  expect([end.type, end.status, end.by, end.reason]).toEqual(['run-end', 'cancelled', 'alice', 'not needed']);
  expect((await store.getRun(runId))?.status).toBe('cancelled');
  await expectCode(cancelRun(store, runId, { by: 'alice' }), ErrorCodes.RUN_ENDED);
  await expectCode(cancelRun(store, uniqueRunId(), { by: 'alice' }), ErrorCodes.RUN_NOT_FOUND);
  await expectCode(cancelRun(store, runId, { by: '' }), ErrorCodes.INPUT_INVALID);
  return undefined;
}
