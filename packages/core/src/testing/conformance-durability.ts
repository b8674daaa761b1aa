import { describe, expect, it } from 'vitest';
import { RunJournal } from '../journal/journal.js';
import { readAll } from '../journal/run-store.js';
import { runStartInput, type StoreHarness, uniqueRunId } from './conformance-support.js';

/** Journal, projections and leases survive close and reopen (durable stores only). */
export function durabilityCases(harness: StoreHarness): void {
  if (harness.reopen) {
    const reopen = harness.reopen;
    describe('store conformance: durability', () => {
      it('keeps journal, projections and leases across close and reopen', async () => {
        const store = await harness.create();
        const runId = uniqueRunId();
        const journal = new RunJournal({ runId, store });
        journal.emit(runStartInput());
        journal.emit({
          type: 'step-start',
          stepId: 'a',
          tool: 'echo',
          attempt: 1,
          executionId: 'ex_durable',
        });
        journal.emit({
          type: 'tool-call',
          stepId: 'a',
          executionId: 'ex_durable',
          attempt: 1,
          tool: 'echo',
          effect: 'read',
          idempotent: true,
          args: { value: 1 },
        });
        await journal.flush();
        const before = await readAll(store, runId);
        const lease = await store.acquireLease(runId, 'owner-a', 60_000);
        const reopened = await reopen(store);
        try {
          expect(await readAll(reopened, runId)).toEqual(before);
          expect((await reopened.getRun(runId))?.stepCounts).toEqual({
            running: 1,
            pending: 1,
          });
          expect((await reopened.getExecution('ex_durable'))?.status).toBe('running');
          expect(await reopened.acquireLease(runId, 'owner-b', 60_000)).toBeUndefined();
          await reopened.releaseLease(lease as NonNullable<typeof lease>);
        } finally {
          await reopened.close();
        }
      });
    });
  }
}
