import { type Plan, type RunStore, readAll, type Step } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { sequentialEngine } from '../src/index.js';
import { removeTempDirectories, storeVariants, tempDirectory } from './support/stores.js';
import { approve, createSeedTools } from './support/tools.js';

afterAll(removeTempDirectories);

/** What a random step does: succeed (read or write), fail, or ask for approval that is granted or not. */
const stepKind = fc.constantFrom('echo', 'note', 'fail', 'approved', 'denied', 'precondition');

function planFrom(kinds: readonly string[]): Plan {
  return makePlan(
    kinds.map((kind, index): Step => {
      const id = `step_${index + 1}`;
      switch (kind) {
        case 'note':
          return { id, tool: 'note', args: { text: id } };
        case 'fail':
          return { id, tool: 'fail', args: { message: `${id} failed` } };
        case 'approved':
          return { id, tool: 'echo', args: { value: 'approve' }, requiresApproval: true };
        case 'denied':
          return { id, tool: 'echo', args: { value: 'deny' }, requiresApproval: true };
        case 'precondition':
          return { id, tool: 'echo', args: {}, preconditions: [{ kind: 'file_exists', path: 'absent' }] };
        default:
          return { id, tool: 'echo', args: { value: index } };
      }
    }),
    { id: `random_${kinds.length}` },
  );
}

const succeeds = (kind: string) => kind === 'echo' || kind === 'note' || kind === 'approved';

describe.each(storeVariants)('properties on $name', (variant) => {
  /** The seed tools in a fresh workspace; approval is granted when the step's value says `approve`. */
  const seedEngine = (store: RunStore) => {
    const tools = createSeedTools(tempDirectory());
    const engine = sequentialEngine({
      tools: tools.registry,
      store,
      approvals: { handler: async (request) => request.args.value === 'approve' },
    });
    return { tools, engine };
  };

  // SQLite opens a file per case: fewer cases keep the suite fast.
  const numRuns = variant.durable ? 15 : 60;

  it('results are a gap-free prefix of the plan, ids unique, timestamps and seq ordered, tools called only for attempted steps', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepKind, { minLength: 1, maxLength: 12 }), async (kinds) => {
        const store: RunStore = await variant.open();
        try {
          const { tools, engine } = seedEngine(store);
          const plan = planFrom(kinds);
          const handle = engine.run(plan, { authorization: approve(plan) });
          const result = await handle.result;

          // Step count invariant and no skipped steps: results are plan.steps[0..k], in order.
          expect(result.steps.length).toBeLessThanOrEqual(plan.steps.length);
          expect(result.steps.map((step) => step.stepId)).toEqual(
            plan.steps.slice(0, result.steps.length).map((step) => step.id),
          );
          // Stop at the first failure: exactly the first non-succeeding kind ends the run.
          const firstFailure = kinds.findIndex((kind) => !succeeds(kind));
          const expectedLength = firstFailure === -1 ? kinds.length : firstFailure + 1;
          expect(result.steps).toHaveLength(expectedLength);
          expect(result.status).toBe(firstFailure === -1 ? 'completed' : 'failed');
          for (const step of result.steps.slice(0, -1)) expect(step.status).toBe('succeeded');

          // Execution ids are unique.
          const ids = result.steps.map((step) => step.executionId);
          expect(new Set(ids).size).toBe(ids.length);

          // Timestamps are ordered, and the run's duration is the sum of its steps'.
          const started = result.steps.map((step) => Date.parse(step.startedAt));
          for (let index = 1; index < started.length; index++) {
            expect(started[index]).toBeGreaterThanOrEqual(started[index - 1] as number);
          }
          expect(result.durationMs).toBeCloseTo(
            result.steps.reduce((total, step) => total + step.durationMs, 0),
            6,
          );

          // The journal: seq gap-free from 1, times never go backwards, one step-end per result.
          const events = await readAll(store, result.runId);
          expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
          const times = events.map((event) => Date.parse(event.at));
          for (let index = 1; index < times.length; index++) {
            expect(times[index]).toBeGreaterThanOrEqual(times[index - 1] as number);
          }
          expect(events.filter((event) => event.type === 'step-end')).toHaveLength(result.steps.length);

          // Tools ran for attempted steps that passed their checks, never for the rest.
          const called = result.steps
            .map((step, index) => ({ step, kind: kinds[index] as string }))
            .filter(({ kind }) => kind !== 'denied' && kind !== 'precondition')
            .map(({ step }) => step.stepId);
          expect(tools.log.calls.map((call) => call.stepId)).toEqual(called);
        } finally {
          await store.close();
        }
      }),
      { numRuns },
    );
  });

  it('a second run of the same approved plan returns the same result and calls no tool', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepKind, { minLength: 1, maxLength: 8 }), async (kinds) => {
        const store: RunStore = await variant.open();
        try {
          const { tools, engine } = seedEngine(store);
          const plan = planFrom(kinds);
          const authorization = approve(plan);
          const first = await engine.run(plan, { authorization }).result;
          const calls = tools.log.count();
          const second = await engine.run(plan, { authorization }).result;
          expect(second).toEqual(first);
          expect(tools.log.count()).toBe(calls);
        } finally {
          await store.close();
        }
      }),
      { numRuns: Math.ceil(numRuns / 2) },
    );
  });
});
