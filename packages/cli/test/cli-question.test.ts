import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readAll } from '@stepwise/core';
import { buildReportModel } from '@stepwise/dashboard/report';
import { blocked, complete, scriptedModel, toolCall } from '@stepwise/engine-agentic/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '../src/create-runner.js';
import { loadPluginModule } from '../src/load-plugins.js';
import { FIXTURES, inProcess } from './helpers.js';

let directory: string;
let database: string;
beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'stepwise-question-'));
  database = path.join(directory, 'stepwise.db');
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function runner(model: ReturnType<typeof scriptedModel>) {
  return createRunner({
    engine: 'agentic',
    workspace: directory,
    tools: [await loadPluginModule(path.join(FIXTURES, 'test-plugin.mjs'), FIXTURES)],
    store: { path: database },
    model,
    agentic: { onBlocked: 'ask' },
  });
}

describe('a goal step’s question from the command line', () => {
  it('pending lists it, respond --answer answers it once, resume hands the answer to the model', async () => {
    const first = await runner(scriptedModel([toolCall('sleep_ms', { ms: 1 }), blocked('which branch should I use?')]));
    const waiting = await first.run({ id: 'ask', goal: 'Nap', steps: [{ id: 'nap', description: 'Nap' }] }).result;
    await first.close();
    expect(waiting.status).toBe('waiting');
    const { runId } = waiting;

    const pending = await inProcess(['pending', '--db', database]);
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout).toMatch(
      new RegExp(`${runId}\\s+\\S+\\s+nap\\s+question \\(blocked\\)\\s+which branch should I use\\?`),
    );
    const both = await inProcess([
      'respond',
      runId,
      '--step',
      'nap',
      '--answer',
      'main',
      '--approve',
      '--db',
      database,
    ]);
    expect(both.code).toBe(2);
    const wrongKind = await inProcess(['respond', runId, '--step', 'nap', '--approve', '--db', database]);
    expect(wrongKind.code).toBe(2);
    expect(wrongKind.stderr).toContain('E004');
    const answered = await inProcess(['respond', runId, '--step', 'nap', '--answer', 'use main', '--db', database]);
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toContain('answer journaled for step nap');
    const twice = await inProcess(['respond', runId, '--step', 'nap', '--answer', 'develop', '--db', database]);
    expect(twice.stderr).toContain('E411');

    const second = await runner(
      scriptedModel(({ request }) => complete(`told: ${String(request.messages.at(-1)?.content)}`)),
    );
    try {
      const completed = await second.resume(runId).result;
      expect(completed.status).toBe('completed');
      expect((completed.steps[0]?.output as { summary?: string } | undefined)?.summary).toContain('use main');

      const shown = await inProcess(['show', runId, '--db', database]);
      expect(shown.stdout).toContain('Goal progress');
      expect(shown.stdout).toMatch(/nap {2}turn 2 · blocked/);
      expect(shown.stdout).toMatch(/nap {2}turn 3 · complete/);
      expect(shown.stdout).toMatch(/nap\s+agentic\s+succeeded.*waited/);

      const model = buildReportModel(await readAll(second.store, runId));
      expect(model.steps[0]?.approvals[0]).toMatchObject({
        question: 'which branch should I use?',
        cause: 'blocked',
        answer: 'use main',
      });
      expect(model.waits.map((wait) => wait.stepId)).toEqual(['nap']);
    } finally {
      await second.close();
    }
  }, 60_000);
});
