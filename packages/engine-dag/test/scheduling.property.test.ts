import type { Plan, RunEvent, Step } from '@stepwise/core';
import { makePlan } from '@stepwise/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';
import { createHarness, eventCollector } from './harness.js';

/** A random DAG: step i depends on a random subset of steps before it; each step has a duration. */
const dagArbitrary = fc.integer({ min: 1, max: 22 }).chain((size) =>
  fc.tuple(
    fc.tuple(
      ...Array.from({ length: size }, (_, index) =>
        fc.record({
          dependsOn: index === 0 ? fc.constant<number[]>([]) : fc.uniqueArray(fc.nat(index - 1), { maxLength: 3 }),
          ms: fc.integer({ min: 0, max: 12 }),
          fails: fc.boolean(),
        }),
      ),
    ),
    fc.constantFrom(1, 2, 3, Number.POSITIVE_INFINITY),
  ),
);

function toPlan(nodes: readonly { dependsOn: number[]; ms: number; fails: boolean }[], withFailures: boolean): Plan {
  return makePlan(
    nodes.map(
      (node, index): Step => ({
        id: `n${index}`,
        ...(withFailures && node.fails
          ? { tool: 'fail', args: { message: `n${index} fails` }, critical: false }
          : { tool: 'work', args: { ms: node.ms } }),
        ...(node.dependsOn.length > 0 ? { dependsOn: node.dependsOn.map((dependency) => `n${dependency}`) } : {}),
      }),
    ),
  );
}

describe('property: random DAGs with random durations', () => {
  it('starts every step only after all its dependencies ended, runs none twice, respects the bound', async () => {
    await fc.assert(
      fc.asyncProperty(dagArbitrary, async ([nodes, concurrency]) => {
        const harness = createHarness();
        const { events, onEvent } = eventCollector();
        const plan = toPlan(nodes, false);
        const result = await dagEngine({ tools: harness.registry, concurrency, onEvent }).run(plan).result;
        expect(result.status).toBe('completed');
        const ended = new Map<string, number>();
        const started = new Map<string, number>();
        for (const event of events as RunEvent[]) {
          if (event.type === 'step-start') {
            expect(started.has(event.stepId), `${event.stepId} started twice`).toBe(false);
            started.set(event.stepId, event.seq);
          }
          if (event.type === 'step-end') ended.set(event.stepId, event.seq);
        }
        for (const step of plan.steps) {
          expect(harness.spansOf(step.id)).toHaveLength(1);
          const span = harness.spansOf(step.id)[0];
          for (const dependency of step.dependsOn ?? []) {
            // In the journal and on the clock alike.
            expect(started.get(step.id) as number).toBeGreaterThan(ended.get(dependency) as number);
            expect(span?.start).toBeGreaterThanOrEqual(harness.spansOf(dependency)[0]?.end as number);
          }
        }
        expect(harness.maxActive()).toBeLessThanOrEqual(concurrency);
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  it('skips exactly the transitive dependents of failed steps and runs everything else', async () => {
    await fc.assert(
      fc.asyncProperty(dagArbitrary, async ([nodes, concurrency]) => {
        const harness = createHarness();
        const plan = toPlan(nodes, true);
        const result = await dagEngine({ tools: harness.registry, concurrency }).run(plan).result;
        const blocked = new Set<string>();
        for (const [index, node] of nodes.entries()) {
          const id = `n${index}`;
          if (node.dependsOn.some((dependency) => nodes[dependency]?.fails || blocked.has(`n${dependency}`)))
            blocked.add(id);
        }
        for (const step of result.steps) {
          const node = nodes[Number(step.stepId.slice(1))];
          const expected = blocked.has(step.stepId) ? 'skipped' : node?.fails ? 'failed' : 'succeeded';
          expect(step.status, step.stepId).toBe(expected);
        }
        const calledIds = harness.log.calls.map((call) => call.stepId);
        expect(new Set(calledIds).size).toBe(calledIds.length);
        expect(calledIds.every((id) => !blocked.has(id))).toBe(true);
        expect(result.status).toBe(nodes.some((node) => node.fails) ? 'partial' : 'completed');
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
