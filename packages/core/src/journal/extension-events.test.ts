import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import { checkEvents } from '../store/check-events.js';
import { MemoryStore } from '../store/memory-store.js';
import { makePlan } from '../testing/fixtures.js';
import type { RunEvent } from './events.js';
import { foldRun, summarizeRun } from './fold-run.js';
import { readAll } from './run-store.js';

const plan = makePlan([{ id: 'deploy', tool: 'echo' }]);
const at = '2030-01-01T00:00:00.000Z';

/** A journal with an event of a type core does not define (another package's, registered by augmentation). */
const journal = [
  { type: 'run-start', planId: plan.id, planDigest: 'digest', plan, engine: 'dag', runId: 'run_x', seq: 1, at },
  { type: 'deploy-end', stepId: 'deploy', url: 'https://example.test', runId: 'run_x', seq: 2, at },
] as unknown as RunEvent[];

describe('events of other packages', () => {
  it('are journaled and read back as they are, and the fold passes over them', async () => {
    const store = new MemoryStore();
    checkEvents('run_x', journal);
    await store.append('run_x', journal);
    expect(await readAll(store, 'run_x')).toEqual(journal);
    const run = foldRun(journal);
    expect(run.lastSeq).toBe(2);
    expect(summarizeRun(run)).toMatchObject({ stepCount: 1, stepCounts: { pending: 1 }, status: 'running' });
  });

  it('name a step with a string when they name one (E004)', () => {
    const bad = [{ ...journal[1], stepId: 7 }] as unknown as RunEvent[];
    expect(() => checkEvents('run_x', bad)).toThrow(expect.objectContaining({ code: ErrorCodes.INPUT_INVALID }));
    const { stepId: _stepId, ...without } = journal[1] as unknown as Record<string, unknown>;
    expect(() => checkEvents('run_x', [without] as unknown as RunEvent[])).not.toThrow();
  });
});
