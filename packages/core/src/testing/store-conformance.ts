import { describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent, RunEventInput } from '../events.js';
import { foldRun, summarizeRun } from '../fold-run.js';
import { invokeStep } from '../invoke-step.js';
import { RunJournal } from '../journal.js';
import { approvePlan } from '../plan-digest.js';
import type { Plan } from '../plan-schema.js';
import { createRedactor } from '../redact.js';
import { finishRun, reopenRun, startRun } from '../run-session.js';
import { type RunStore, readAll } from '../run-store.js';
import { createTestTools, makePlan } from './fixtures.js';

/** How the conformance suite gets stores to test. */
export interface StoreHarness {
  /** A new, empty store. */
  create(): Promise<RunStore>;
  /** Closes `store` and opens the same storage again. Omit for stores that are not durable. */
  reopen?(store: RunStore): Promise<RunStore>;
}

const expectCode = async (promise: Promise<unknown>, code: string) => {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(StepwiseError.isInstance(error), `expected a StepwiseError ${code}, got ${String(error)}`).toBe(true);
  expect((error as StepwiseError).code).toBe(code);
};

let counter = 0;
const uniqueRunId = () => `run_conformance_${process.pid}_${Date.now()}_${counter++}`;

function stamp(runId: string, startSeq: number, inputs: RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({
        ...input,
        runId,
        seq: startSeq + index,
        at: new Date().toISOString(),
      }) as RunEvent,
  );
}

const samplePlan: Plan = makePlan(
  [
    { id: 'a', tool: 'echo', args: { value: 1 }, description: 'echo one' },
    {
      id: 'b',
      tool: 'note',
      args: { text: 'hi' },
      dependsOn: ['a'],
      requiresApproval: true,
    },
  ],
  { id: 'plan_conformance', goal: 'prove the store' },
);

function runStartInput(plan: Plan = samplePlan): RunEventInput {
  return {
    type: 'run-start',
    planId: plan.id,
    planDigest: 'digest',
    plan,
    engine: 'test',
  };
}

/**
 * The contract every RunStore must meet. Call it from the store's own test file:
 * `runStoreConformance({ create: async () => createSqliteStore({ path }) , reopen })`.
 */
export function runStoreConformance(harness: StoreHarness): void {
  const withStore = async (body: (store: RunStore) => Promise<RunStore | undefined>) => {
    const store = await harness.create();
    let current: RunStore | undefined = store;
    try {
      current = (await body(store)) ?? store;
    } finally {
      await current?.close();
    }
  };

  describe('store conformance: journal', () => {
    it('reads back what was appended, in order, with gap-free seq', () =>
      withStore(async (store) => {
        const runId = uniqueRunId();
        await store.append(runId, stamp(runId, 1, [runStartInput()]));
        const steps: RunEventInput[] = [];
        for (let index = 0; index < 20; index++) {
          steps.push({
            type: 'step-start',
            stepId: 'a',
            tool: 'echo',
            attempt: index + 1,
            executionId: `ex_${index}`,
          });
        }
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
      }));

    it('refuses gaps and duplicates (E502) and writes nothing of a bad batch', () =>
      withStore(async (store) => {
        const runId = uniqueRunId();
        await store.append(runId, stamp(runId, 1, [runStartInput()]));
        const good = stamp(runId, 2, [
          {
            type: 'step-start',
            stepId: 'a',
            tool: 'echo',
            attempt: 1,
            executionId: 'x',
          },
        ]);
        await expectCode(store.append(runId, stamp(runId, 3, [good[0] as RunEventInput])), ErrorCodes.JOURNAL_CONFLICT);
        await expectCode(store.append(runId, stamp(runId, 1, [runStartInput()])), ErrorCodes.JOURNAL_CONFLICT);
        // A batch whose third event has the wrong seq: none of it may land.
        const batch = stamp(runId, 2, [
          {
            type: 'step-start',
            stepId: 'a',
            tool: 'echo',
            attempt: 1,
            executionId: 'x',
          },
          {
            type: 'step-start',
            stepId: 'a',
            tool: 'echo',
            attempt: 2,
            executionId: 'y',
          },
          {
            type: 'step-start',
            stepId: 'a',
            tool: 'echo',
            attempt: 3,
            executionId: 'z',
          },
        ]);
        const broken = [batch[0], batch[1], { ...batch[2], seq: 9 }] as RunEvent[];
        await expectCode(store.append(runId, broken), ErrorCodes.JOURNAL_CONFLICT);
        const foreign = [batch[0], { ...batch[1], runId: 'run_other' }] as RunEvent[];
        await expectCode(store.append(runId, foreign), ErrorCodes.JOURNAL_CONFLICT);
        expect((await readAll(store, runId)).length).toBe(1);
        expect((await store.getRun(runId))?.lastSeq).toBe(1);
        return undefined;
      }));

    it('keeps runs apart under concurrent appenders', () =>
      withStore(async (store) => {
        const runs = [uniqueRunId(), uniqueRunId(), uniqueRunId()];
        await Promise.all(
          runs.map(async (runId) => {
            await store.append(runId, stamp(runId, 1, [runStartInput()]));
            for (let seq = 2; seq <= 40; seq++) {
              await store.append(
                runId,
                stamp(runId, seq, [
                  {
                    type: 'step-start',
                    stepId: 'a',
                    tool: 'echo',
                    attempt: seq,
                    executionId: `e${seq}`,
                  },
                ]),
              );
            }
          }),
        );
        for (const runId of runs) {
          const events = await readAll(store, runId);
          expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
          expect(events.every((event) => event.runId === runId)).toBe(true);
        }
        return undefined;
      }));
  });

  describe('store conformance: projections and audit', () => {
    const executeSample = async (store: RunStore, secret = 'hunter2-very-secret') => {
      const { registry } = createTestTools();
      const runId = uniqueRunId();
      const authorization = approvePlan(samplePlan, { by: 'alice' });
      const redactor = createRedactor({ secrets: [secret] });
      const journal = await startRun({
        store,
        runId,
        plan: samplePlan,
        engine: 'test',
        authorization,
        redactor,
      });
      const context = {
        runId,
        journal,
        registry,
        approvals: {
          handler: async () => ({
            decision: 'approve' as const,
            by: 'bob',
            reason: 'looks fine',
          }),
        },
      };
      const first = await invokeStep(
        {
          ...(samplePlan.steps[0] as Plan['steps'][0]),
          args: { value: `token ${secret} ghp_${'a'.repeat(36)}` },
        },
        { attempt: 1, references: 'literal' },
        context,
      );
      const second = await invokeStep(
        samplePlan.steps[1] as Plan['steps'][0],
        { attempt: 1, references: 'literal' },
        context,
      );
      const result = await finishRun(journal, {
        plan: samplePlan,
        engine: 'test',
        status: 'completed',
        steps: [first, second],
        durationMs: first.durationMs + second.durationMs,
      });
      return { runId, first, second, result, secret };
    };

    it('getExecution returns the whole audit bundle', () =>
      withStore(async (store) => {
        const { second, runId } = await executeSample(store);
        const record = await store.getExecution(second.executionId);
        expect(record).toBeDefined();
        expect(record?.runId).toBe(runId);
        expect(record?.stepId).toBe('b');
        expect(record?.tool).toBe('note');
        expect(record?.effect).toBe('write');
        expect(record?.args).toEqual({ text: 'hi' });
        expect(record?.status).toBe('succeeded');
        expect(record?.output).toEqual({ written: 2 });
        expect(Date.parse(record?.startedAt ?? '')).not.toBeNaN();
        expect(Date.parse(record?.finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(record?.startedAt ?? ''));
        expect(record?.why.planId).toBe('plan_conformance');
        expect(record?.why.goal).toBe('prove the store');
        expect(record?.why.authorization?.by).toBe('alice');
        expect(record?.why.approvals.map((approval) => [approval.decision, approval.by])).toEqual([
          ['approved', 'bob'],
        ]);
        expect(await store.getExecution('ex_missing')).toBeUndefined();
        return undefined;
      }));

    it('never returns a secret from any read', () =>
      withStore(async (store) => {
        const { runId, first, secret } = await executeSample(store);
        const everything = JSON.stringify([
          await readAll(store, runId),
          await store.getRun(runId),
          await store.listRuns(),
          await store.getExecution(first.executionId),
        ]);
        expect(everything).not.toContain(secret);
        expect(everything).not.toContain(`ghp_${'a'.repeat(36)}`);
        expect(everything).toContain('[REDACTED]');
        return undefined;
      }));

    it('getRun agrees with foldRun of the journal', () =>
      withStore(async (store) => {
        const { runId } = await executeSample(store);
        const summary = await store.getRun(runId);
        const folded = summarizeRun(foldRun(await readAll(store, runId)));
        expect(summary).toEqual(folded);
        expect(summary?.status).toBe('completed');
        expect(summary?.stepCounts).toEqual({ succeeded: 2 });
        return undefined;
      }));

    it('lists runs by status, plan and time, newest first', () =>
      withStore(async (store) => {
        const before = new Date(Date.now() - 1000).toISOString();
        const done = await executeSample(store);
        await new Promise((resolve) => setTimeout(resolve, 5));
        const open = uniqueRunId();
        await store.append(
          open,
          stamp(open, 1, [runStartInput(makePlan([{ id: 'x', tool: 'echo' }], { id: 'other' }))]),
        );
        const all = await store.listRuns({ since: before });
        expect(all.map((run) => run.runId)).toEqual([open, done.runId]);
        expect((await store.listRuns({ status: 'completed', since: before })).map((run) => run.runId)).toEqual([
          done.runId,
        ]);
        expect((await store.listRuns({ status: ['running'], since: before })).map((run) => run.runId)).toEqual([open]);
        expect((await store.listRuns({ planId: 'other', since: before })).map((run) => run.runId)).toEqual([open]);
        expect((await store.listRuns({ since: before, limit: 1 })).map((run) => run.runId)).toEqual([open]);
        expect((await store.listRuns({ since: before, limit: 1, offset: 1 })).map((run) => run.runId)).toEqual([
          done.runId,
        ]);
        expect(await store.listRuns({ until: before, planId: 'other' })).toEqual([]);
        return undefined;
      }));
  });

  describe('store conformance: leases', () => {
    it('gives a run to one owner at a time and fences stale writers (E501)', () =>
      withStore(async (store) => {
        const runId = uniqueRunId();
        const first = await store.acquireLease(runId, 'owner-a', 60_000);
        expect(first).toBeDefined();
        expect(await store.acquireLease(runId, 'owner-b', 60_000)).toBeUndefined();
        await store.append(runId, stamp(runId, 1, [runStartInput()]), first);
        await expectCode(
          store.append(runId, stamp(runId, 2, [{ type: 'run-resume', owner: 'x', interrupted: [] }])),
          ErrorCodes.LEASE_CONFLICT,
        );
        const renewed = await store.renewLease(first as NonNullable<typeof first>);
        expect(renewed.token).toBe(first?.token);
        await store.releaseLease(renewed);
        const second = await store.acquireLease(runId, 'owner-b', 60_000);
        expect(second?.token).toBeGreaterThan(first?.token ?? Number.POSITIVE_INFINITY);
        await expectCode(
          store.append(runId, stamp(runId, 2, [{ type: 'run-resume', owner: 'a', interrupted: [] }]), renewed),
          ErrorCodes.LEASE_CONFLICT,
        );
        await expectCode(store.renewLease(renewed), ErrorCodes.LEASE_CONFLICT);
        await store.append(runId, stamp(runId, 2, [{ type: 'run-resume', owner: 'b', interrupted: [] }]), second);
        expect((await readAll(store, runId)).length).toBe(2);
        return undefined;
      }));

    it('lets another owner take an expired lease', () =>
      withStore(async (store) => {
        const runId = uniqueRunId();
        const stale = await store.acquireLease(runId, 'owner-a', 1);
        await new Promise((resolve) => setTimeout(resolve, 20));
        const taken = await store.acquireLease(runId, 'owner-b', 60_000);
        expect(taken).toBeDefined();
        await expectCode(store.append(runId, stamp(runId, 1, [runStartInput()]), stale), ErrorCodes.LEASE_CONFLICT);
        return undefined;
      }));

    it('lets exactly one of two concurrent resumes win', () =>
      withStore(async (store) => {
        const { registry } = createTestTools();
        const runId = uniqueRunId();
        const journal = await startRun({
          store,
          runId,
          plan: samplePlan,
          engine: 'test',
        });
        await invokeStep(
          samplePlan.steps[0] as Plan['steps'][0],
          { attempt: 1, references: 'literal' },
          {
            runId,
            journal,
            registry,
          },
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
        await winner.journal.record({
          type: 'run-resume',
          owner: 'winner',
          interrupted: [],
        });
        await winner.journal.close();
        return undefined;
      }));
  });

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
