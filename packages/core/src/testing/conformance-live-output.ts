import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { LIVE_OUTPUT_TAIL_CHARS } from '../journal/live-output-publisher.js';
import type { Lease, LiveOutputTail, RunStore } from '../journal/run-store.js';
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

/** Live output tails beside the journal (`writeLiveOutput`, `readLiveOutput`, `clearLiveOutput`). */
export function liveOutputCases(harness: StoreHarness): void {
  const withStore = storeRunner(harness);
  describe('store conformance: live output', () => {
    it('keeps the latest tail per call and stream until the call clears it or the run ends', () =>
      withStore(keepsLatestTails));
    it("receives a running call's output from the journal, bounded and throttled, and loses it when the call ends", () =>
      withStore(publishesFromJournal));
  });
}

const tail = (runId: string, executionId: string, stream: 'stdout' | 'stderr', text: string): LiveOutputTail => ({
  runId,
  stepId: 'a',
  executionId,
  stream,
  text,
  total: text.length,
  at: new Date().toISOString(),
});

async function keepsLatestTails(store: RunStore): Promise<undefined> {
  if (!store.writeLiveOutput || !store.readLiveOutput || !store.clearLiveOutput) return undefined;
  const runId = uniqueRunId();
  const lease = (await store.acquireLease(runId, 'owner-a', 60_000)) as Lease;
  await store.append(runId, stamp(runId, 1, [runStartInput()]), lease);
  expect(await store.readLiveOutput(runId)).toEqual([]);
  await store.writeLiveOutput(tail(runId, 'ex_1', 'stdout', 'line 1\n'));
  await store.writeLiveOutput(tail(runId, 'ex_1', 'stdout', 'line 1\nline 2\n'));
  await store.writeLiveOutput(tail(runId, 'ex_1', 'stderr', 'warning\n'));
  await store.writeLiveOutput(tail(runId, 'ex_2', 'stdout', 'other call\n'));
  const read = await store.readLiveOutput(runId);
  expect(read.map((entry) => [entry.executionId, entry.stream, entry.text, entry.total]).sort()).toEqual([
    ['ex_1', 'stderr', 'warning\n', 8],
    ['ex_1', 'stdout', 'line 1\nline 2\n', 14],
    ['ex_2', 'stdout', 'other call\n', 11],
  ]);
  expect(read[0]).toMatchObject({ runId, stepId: 'a' });
  await store.clearLiveOutput(runId, 'ex_1');
  expect((await store.readLiveOutput(runId)).map((entry) => entry.executionId)).toEqual(['ex_2']);
  await store.append(runId, stamp(runId, 2, [{ type: 'run-end', status: 'cancelled', durationMs: 1 }]), lease);
  expect(await store.readLiveOutput(runId)).toEqual([]);
  await expectCode(
    store.writeLiveOutput({ ...tail(runId, 'ex_3', 'stdout', 'x'), stream: 'model' as 'stdout' }),
    ErrorCodes.INPUT_INVALID,
  );
  return undefined;
}

async function publishesFromJournal(store: RunStore): Promise<undefined> {
  if (!store.readLiveOutput) return undefined;
  let writes = 0;
  const counting = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === 'writeLiveOutput') writes++;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const runId = uniqueRunId();
  const journal = await startRun({ store: counting, runId, plan: samplePlan, engine: 'test' });
  try {
    // Nothing is published while nothing is written.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await store.readLiveOutput(runId)).toEqual([]);
    const started = Date.now();
    for (let index = 0; index < 40; index++) {
      journal.live.toolOutput('a', 'ex_live', 'stdout', `${'x'.repeat(4_000)} line ${index}\n`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    let published: LiveOutputTail | undefined;
    for (let waited = 0; waited < 3_000 && !published?.text.endsWith('line 39\n'); waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      published = (await store.readLiveOutput(runId))[0];
    }
    expect(published?.text.endsWith('line 39\n')).toBe(true);
    expect(published?.text.length).toBe(LIVE_OUTPUT_TAIL_CHARS);
    expect(published?.total).toBe(40 * 4_008 + 30);
    // Coalesced: one write per 500 ms of writing at most (and one for the rest).
    expect(writes).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 500) + 1);
    journal.live.endExecution('ex_live');
    for (let waited = 0; waited < 2_000 && (await store.readLiveOutput(runId)).length > 0; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await store.readLiveOutput(runId)).toEqual([]);
  } finally {
    await journal.close();
  }
  return undefined;
}
