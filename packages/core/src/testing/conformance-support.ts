import { expect } from 'vitest';
import { StepwiseError } from '../errors.js';
import type { RunEvent, RunEventInput } from '../journal/events.js';
import type { RunStore } from '../journal/run-store.js';
import type { Plan } from '../plan/plan-schema.js';
import { makePlan } from './fixtures.js';

/** How the conformance suite gets stores to test. */
export interface StoreHarness {
  /** A new, empty store. */
  create(): Promise<RunStore>;
  /** Closes `store` and opens the same storage again. Omit for stores that are not durable. */
  reopen?(store: RunStore): Promise<RunStore>;
  /**
   * A second handle on the same storage, as another process would open it (its own connections).
   * The race cases then run half their contenders on it. Omit where there is no such thing (memory).
   */
  connect?(store: RunStore): Promise<RunStore>;
}

export const expectCode = async (promise: Promise<unknown>, code: string) => {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(StepwiseError.isInstance(error), `expected a StepwiseError ${code}, got ${String(error)}`).toBe(true);
  expect((error as StepwiseError).code).toBe(code);
};

let counter = 0;
export const uniqueRunId = () => `run_conformance_${process.pid}_${Date.now()}_${counter++}`;

export function stamp(runId: string, startSeq: number, inputs: RunEventInput[]): RunEvent[] {
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

export const samplePlan: Plan = makePlan(
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

/** What a resuming owner journals first: the event lease and seq races are fought over. */
export const resumeInput = (owner: string): RunEventInput => ({ type: 'run-resume', owner, interrupted: [] });

export function runStartInput(plan: Plan = samplePlan): RunEventInput {
  return {
    type: 'run-start',
    planId: plan.id,
    planDigest: 'digest',
    plan,
    engine: 'test',
  };
}

/** Runs `body` on a new store and closes whichever store it returns (or the new one). */
export function storeRunner(harness: StoreHarness) {
  return async (body: (store: RunStore) => Promise<RunStore | undefined>) => {
    const store = await harness.create();
    let current: RunStore | undefined = store;
    try {
      current = (await body(store)) ?? store;
    } finally {
      await current?.close();
    }
  };
}
