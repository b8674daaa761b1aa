import { join } from 'node:path';
import { ErrorCodes, type Plan, readAll } from '@stepwise/core';
import { invokeStep, startRun } from '@stepwise/core/engine';
import { createTestTools, makePlan } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { fixture, spawnNode, temporaryDirectory } from './helpers.js';

const directory = temporaryDirectory('resume');

const plan: Plan = makePlan(
  [
    { id: 'a', tool: 'echo', args: { value: 1 } },
    { id: 'b', tool: 'note', args: { text: 'hi' }, dependsOn: ['a'] },
  ],
  { id: 'plan_resume', goal: 'resume once' },
);

/** Journals a run whose first step succeeded, then lets go of it (a process that stopped). */
async function interruptedRun(path: string, runId: string): Promise<void> {
  const store = createSqliteStore({ path });
  const { registry } = createTestTools();
  const journal = await startRun({ store, runId, plan, engine: 'test' });
  await invokeStep(
    plan.steps[0] as Plan['steps'][0],
    { attempt: 1, references: 'literal' },
    { runId, journal, registry },
  );
  await journal.close();
  await store.close();
}

describe('two processes resuming one run', () => {
  it('lets exactly one win; the other gets E501 and writes nothing', { timeout: 60_000 }, async () => {
    for (let round = 0; round < 3; round++) {
      const path = join(directory, `resume-${round}.db`);
      const runId = `run_resume_${round}`;
      await interruptedRun(path, runId);
      const children = ['resumer-1', 'resumer-2'].map((owner) =>
        spawnNode(fixture('resume-child.mjs'), [path, runId, owner]),
      );
      await Promise.all(children.map((child) => child.waitFor((line) => line === 'ready')));
      // Both are told to go in the same tick: the database decides who wins.
      for (const child of children) child.process.stdin?.write('go\n');
      const outcomes = await Promise.all(
        children.map(async (child) => JSON.parse(await child.waitFor((line) => line.startsWith('{')))),
      );
      const winners = outcomes.filter((outcome) => outcome.won);
      const losers = outcomes.filter((outcome) => !outcome.won);
      expect(winners).toHaveLength(1);
      expect(losers).toHaveLength(1);
      expect(losers[0].code).toBe(ErrorCodes.LEASE_CONFLICT);
      // The winner folded the journal as it was: run-start + step a's four events.
      expect(winners[0].foldedSeq).toBe(5);
      // The loser has exited; the winner holds the lease until told to finish.
      children[outcomes.indexOf(winners[0])]?.process.stdin?.end('exit\n');
      const exits = await Promise.all(children.map((child) => child.exited));
      expect(exits.map((exit) => exit.code)).toEqual([0, 0]);

      const store = createSqliteStore({ path });
      const events = await readAll(store, runId);
      const resumes = events.filter((event) => event.type === 'run-resume');
      expect(resumes).toHaveLength(1);
      expect(resumes[0]).toMatchObject({ owner: winners[0].owner, seq: 6 });
      expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      // The winner released its lease on close: the run can be taken again.
      expect(await store.acquireLease(runId, 'after', 1000)).toMatchObject({ token: winners[0].token + 1 });
      await store.close();
    }
  });

  it('creates and migrates one new file from three processes at once', { timeout: 60_000 }, async () => {
    for (let round = 0; round < 3; round++) {
      const path = join(directory, `fresh-${round}.db`);
      const children = [0, 1, 2].map(() => spawnNode(fixture('open-store.mjs'), [path]));
      const outcomes = await Promise.all(
        children.map(async (child) => JSON.parse(await child.waitFor((line) => line.startsWith('{')))),
      );
      // Every process opened and migrated; the first append of seq 1 wins, the others are told why.
      expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(1);
      expect(outcomes.filter((outcome) => !outcome.ok).map((outcome) => outcome.code)).toEqual([
        ErrorCodes.JOURNAL_CONFLICT,
        ErrorCodes.JOURNAL_CONFLICT,
      ]);
      await Promise.all(children.map((child) => child.exited));
      const store = createSqliteStore({ path });
      expect((await store.getRun('run_probe'))?.lastSeq).toBe(1);
      await store.close();
    }
  });
});
