import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunEventType } from '../journal/events.js';
import { foldRun } from '../journal/fold-run.js';
import { MemoryStore } from '../store/memory-store.js';
import { checkStoreAgainstFold, firstDifference } from './fold-comparison.js';
import { randomJournals } from './random-journal.js';
import { EXTENSION_EVENT_TYPES, type ExtensionEventGenerator } from './random-step-events.js';
import { type Draw, seededDraw } from './random-values.js';

const RUNS = Number(process.env.STEPWISE_PROPERTY_RUNS ?? 1000);

/** Every type a journal may hold (an object, so a new event type that is not listed fails to compile). */
const EVENT_TYPES = Object.keys({
  'run-start': true,
  'run-resume': true,
  'run-continue': true,
  'step-start': true,
  'approval-request': true,
  'approval-decision': true,
  'approval-response': true,
  'tool-call': true,
  'tool-result': true,
  'step-retry': true,
  'recovery-decision': true,
  'adjust-decision': true,
  'progress-report': true,
  'process-start': true,
  'process-kill': true,
  'model-call': true,
  'goal-progress': true,
  'question-ask': true,
  'limit-reach': true,
  'step-end': true,
  'plan-revise': true,
  'run-end': true,
} satisfies Record<RunEventType, true>);

describe('randomJournals', () => {
  it('journals every event type and extension events, in journals that fold, with gap-free seqs and batches that cover them', () => {
    const seen = new Map<string, number>();
    for (let seed = 1; seed <= 300; seed++) {
      for (const journal of randomJournals(seededDraw(seed), { prefix: `seed${seed}` })) {
        journal.events.forEach((event, index) => {
          expect(event.seq).toBe(index + 1);
          seen.set(event.type, (seen.get(event.type) ?? 0) + 1);
        });
        expect(journal.batches.reduce((sum, size) => sum + size, 0)).toBe(journal.events.length);
        const fold = foldRun(journal.events, journal.runId);
        expect(fold.lastSeq).toBe(journal.events.length);
      }
    }
    expect(EVENT_TYPES.filter((type) => !seen.has(type))).toEqual([]);
    expect(EXTENSION_EVENT_TYPES.filter((type) => !seen.has(type))).toEqual([]);
    expect(
      [...seen.keys()].filter((type) => !EVENT_TYPES.includes(type) && !EXTENSION_EVENT_TYPES.includes(type)),
    ).toEqual([]);
  });

  it("journals a generator's extension events in the order it gives them, at a step of the run, under the plan's revision", () => {
    const given: string[] = [];
    const generator: ExtensionEventGenerator = ({ runId, stepId, attempt, revision, text, value }) => {
      given.push(runId);
      return [
        { type: 'probe-start', stepId, attempt, payload: value() },
        { type: 'probe-end', stepId, attempt, revision: revision ?? null, note: text(2) },
      ];
    };
    let probes = 0;
    for (let seed = 1; seed <= 200; seed++) {
      for (const journal of randomJournals(seededDraw(seed), { extensionEvents: generator })) {
        let revision: number | null = null;
        const stepIds = new Set<string>(['unplanned']);
        journal.events.forEach((event, index) => {
          const fields = event as unknown as Record<string, unknown>;
          if (event.type === 'run-start' || event.type === 'plan-revise') {
            for (const step of event.plan.steps) stepIds.add(step.id);
          }
          if (event.type === 'plan-revise') revision = event.revision;
          expect(EXTENSION_EVENT_TYPES).not.toContain(event.type);
          if (fields.type === 'probe-start') {
            probes += 1;
            expect(stepIds).toContain(fields.stepId);
            const end = journal.events[index + 1] as unknown as Record<string, unknown>;
            expect(end).toMatchObject({ type: 'probe-end', stepId: fields.stepId, attempt: fields.attempt, revision });
          }
        });
        expect(foldRun(journal.events, journal.runId).lastSeq).toBe(journal.events.length);
      }
    }
    expect(probes).toBe(given.length);
    expect(probes).toBeGreaterThan(100);
  });

  it('gives the same journals for the same draws', () => {
    expect(randomJournals(seededDraw(7))).toEqual(randomJournals(seededDraw(7)));
    expect(firstDifference(randomJournals(seededDraw(7)), randomJournals(seededDraw(8)))).toBeDefined();
  });
});

describe('firstDifference', () => {
  it('names the path of the first difference and treats undefined properties as absent', () => {
    expect(firstDifference({ a: 1, b: undefined }, { a: 1 })).toBeUndefined();
    expect(firstDifference({ a: [1, { c: 2 }] }, { a: [1, { c: 3 }] })).toMatch(/^\/a\/1\/c: got 2, the fold says 3/);
    expect(firstDifference([1], [1, 2])).toMatch(/got 1 items, the fold says 2/);
    expect(firstDifference(null, {})).toMatch(/^\/: got null/);
  });
});

describe('MemoryStore against the fold', () => {
  it(`agrees on ${RUNS} random journals (STEPWISE_PROPERTY_RUNS)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.gen(), async (g) => {
        const draw: Draw = (min, max) => g(fc.integer, { min, max });
        const journals = randomJournals(draw);
        expect(await checkStoreAgainstFold(new MemoryStore(), journals, draw)).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  }, 300_000);
});
