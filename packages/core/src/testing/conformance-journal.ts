import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import type { RunEvent, RunEventInput } from '../journal/events.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import {
  expectCode,
  runStartInput,
  type StoreHarness,
  stamp,
  storeRunner,
  uniqueRunId,
} from './conformance-support.js';

/** Append and read: order, gap-free seq, all-or-nothing batches, runs kept apart. */
export function journalCases(harness: StoreHarness): void {
  const withStore = storeRunner(harness);

  describe('store conformance: journal', () => {
    it('reads back what was appended, in order, with gap-free seq', () => withStore(readsBackInOrder));
    it('refuses gaps and duplicates (E502) and writes nothing of a bad batch', () =>
      withStore(refusesGapsAndDuplicates));
    it('keeps runs apart under concurrent appenders', () => withStore(keepsRunsApart));
  });
}

const stepStart = (attempt: number, executionId: string): RunEventInput => ({
  type: 'step-start',
  stepId: 'a',
  tool: 'echo',
  attempt,
  executionId,
});

async function readsBackInOrder(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  await store.append(runId, stamp(runId, 1, [runStartInput()]));
  const steps = Array.from({ length: 20 }, (_, index) => stepStart(index + 1, `ex_${index}`));
  await store.append(runId, stamp(runId, 2, steps.slice(0, 7)));
  await store.append(runId, stamp(runId, 9, steps.slice(7)));
  const events = await readAll(store, runId);
  expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 21 }, (_, index) => index + 1));
  expect(events[0]?.type).toBe('run-start');
  expect((events[5] as { attempt: number }).attempt).toBe(5);
  const tail = await readAll(store, runId, 18);
  expect(tail.map((event) => event.seq)).toEqual([19, 20, 21]);
  expect(await readAll(store, 'run_that_does_not_exist')).toEqual([]);
  return undefined;
}

async function refusesGapsAndDuplicates(store: RunStore): Promise<undefined> {
  const runId = uniqueRunId();
  await store.append(runId, stamp(runId, 1, [runStartInput()]));
  const good = stamp(runId, 2, [stepStart(1, 'x')]);
  await expectCode(store.append(runId, stamp(runId, 3, [good[0] as RunEventInput])), ErrorCodes.JOURNAL_CONFLICT);
  await expectCode(store.append(runId, stamp(runId, 1, [runStartInput()])), ErrorCodes.JOURNAL_CONFLICT);
  // A batch whose third event has the wrong seq: none of it may land.
  const batch = stamp(runId, 2, [stepStart(1, 'x'), stepStart(2, 'y'), stepStart(3, 'z')]);
  const broken = [batch[0], batch[1], { ...batch[2], seq: 9 }] as RunEvent[];
  await expectCode(store.append(runId, broken), ErrorCodes.JOURNAL_CONFLICT);
  const foreign = [batch[0], { ...batch[1], runId: 'run_other' }] as RunEvent[];
  await expectCode(store.append(runId, foreign), ErrorCodes.JOURNAL_CONFLICT);
  expect((await readAll(store, runId)).length).toBe(1);
  expect((await store.getRun(runId))?.lastSeq).toBe(1);
  return undefined;
}

async function keepsRunsApart(store: RunStore): Promise<undefined> {
  const runs = [uniqueRunId(), uniqueRunId(), uniqueRunId()];
  await Promise.all(
    runs.map(async (runId) => {
      await store.append(runId, stamp(runId, 1, [runStartInput()]));
      for (let seq = 2; seq <= 40; seq++) await store.append(runId, stamp(runId, seq, [stepStart(seq, `e${seq}`)]));
    }),
  );
  for (const runId of runs) {
    const events = await readAll(store, runId);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
    expect(events.every((event) => event.runId === runId)).toBe(true);
  }
  return undefined;
}
