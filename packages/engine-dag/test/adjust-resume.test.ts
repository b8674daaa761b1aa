import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunEvent, readAll } from '@stepwise/core';
import { afterAll, describe, expect, it } from 'vitest';
import { dagEngine } from '../src/index.js';
import { available, decisionsIn, isPlanEnd, openSqlite, resumeWithHook } from './adjust-resume-support.js';
// @ts-expect-error plain ESM fixture shared with the child process, no types
import { planningHook, planningPlan, planningTools } from './fixtures/adjust-until-killed.mjs';

const sqlite = available('@stepwise/store-sqlite');

describe.skipIf(!sqlite)('resume of a run cut between a step-end and its adjust decision (SQLite file)', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stepwise-dag-adjust-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  /** A whole run journaled in one SQLite file, and the part of it up to `cut` copied into another. */
  async function cutRun(name: string, cut: (event: RunEvent) => boolean) {
    const sideFile = join(directory, `${name}.side`);
    writeFileSync(sideFile, '');
    const runId = `run_${name}`;
    const whole = await openSqlite(join(directory, `${name}-whole.db`));
    const engine = dagEngine({
      tools: planningTools(sideFile),
      store: whole,
      concurrency: 1,
      adjust: planningHook([]),
    });
    expect((await engine.run(planningPlan, { runId }).result).status).toBe('completed');
    const events = await readAll(whole, runId);
    await whole.close();
    const store = await openSqlite(join(directory, `${name}.db`));
    await store.append(runId, events.slice(0, events.findIndex(cut) + 1));
    writeFileSync(sideFile, '');
    return { store, runId, sideFile };
  }

  it('asks the hook once about the planning step, and the planned steps run', async () => {
    const { store, runId, sideFile } = await cutRun('missing', isPlanEnd);
    try {
      expect(decisionsIn(await readAll(store, runId))).toEqual([]);
      const { result, asked } = await resumeWithHook(store, runId, sideFile);
      expect(asked).toEqual(['plan:succeeded', 'build:succeeded', 'check:succeeded']);
      expect(result.status).toBe('completed');
      expect(result.steps.map((step) => step.stepId)).toEqual(['plan', 'build', 'check']);
      expect(readFileSync(sideFile, 'utf8')).toBe('build 1\ncheck 1\n');
      expect(decisionsIn(await readAll(store, runId))).toEqual(['plan:revise', 'build:continue', 'check:continue']);
      expect(await store.getRun(runId)).toMatchObject({ status: 'completed', stepCount: 3 });
    } finally {
      await store.close();
    }
  });

  it('never asks again about the planning step once its decision is journaled', async () => {
    const { store, runId, sideFile } = await cutRun('present', (event) => event.type === 'plan-revise');
    try {
      const { result, asked } = await resumeWithHook(store, runId, sideFile);
      expect(asked).toEqual(['build:succeeded', 'check:succeeded']);
      expect(result.status).toBe('completed');
      expect(decisionsIn(await readAll(store, runId))).toEqual(['plan:revise', 'build:continue', 'check:continue']);
    } finally {
      await store.close();
    }
  });
});
