import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ErrorCodes, pendingApprovals, type RunEvent, readAll, respond } from '@stepwise/core';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { agenticEngine, heuristicEstimator } from '../src/index.js';
import { blocked, complete, scriptedModel, toolCall } from '../src/testing/index.js';
import { testTools } from './helpers.js';

const child = fileURLToPath(new URL('./fixtures/ask-child.mjs', import.meta.url));
const run = promisify(execFile);

// biome-ignore lint/suspicious/noExplicitAny: JSON a child process printed, read field by field
type Printed = Record<string, any>;

let directory: string;
afterEach(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
});

async function setup(): Promise<{ database: string; runId: string; process(...args: string[]): Promise<Printed> }> {
  directory = await mkdtemp(path.join(tmpdir(), 'stepwise-ask-'));
  const database = path.join(directory, 'runs.db');
  const runId = `run_ask_${Date.now()}`;
  return {
    database,
    runId,
    async process(mode: string, ...rest: string[]) {
      const { stdout } = await run(process.execPath, [child, mode, database, directory, runId, ...rest]);
      return JSON.parse(stdout.trim().split('\n').at(-1) as string);
    },
  };
}

const lines = () => readFileSync(path.join(directory, 'lines.txt'), 'utf8').split('\n').filter(Boolean);

describe('a goal step asks a person instead of failing (SQLite, separate processes)', () => {
  it('BLOCKED: the reason is the question, the run waits, the answer is the model’s next message', async () => {
    const flow = await setup();
    const waiting = await flow.process('run-blocked');
    expect(waiting.status).toBe('waiting');
    expect(waiting.steps[0]).toMatchObject({ status: 'waiting', error: { code: ErrorCodes.APPROVAL_WAITING } });
    expect(lines()).toEqual(['one']);

    const store = createSqliteStore({ path: flow.database });
    const [question] = await pendingApprovals(store, flow.runId);
    expect(question).toMatchObject({
      kind: 'question',
      stepId: 'work',
      cause: 'blocked',
      question: 'which file should hold the second line?',
    });
    await expect(respond(store, flow.runId, { stepId: 'work', decision: 'approve', by: 'bob' })).rejects.toMatchObject({
      code: ErrorCodes.INPUT_INVALID,
    });
    await store.close();

    const answered = await flow.process('respond', 'work', 'put it in lines.txt too');
    expect(answered).toMatchObject({
      type: 'approval-response',
      decision: 'answer',
      answer: 'put it in lines.txt too',
    });
    expect(answered.requestId).toBe(question?.requestId);
    const again = await flow.process('respond', 'work', 'another answer');
    expect(again.error).toMatchObject({ code: ErrorCodes.ANSWER_REFUSED, details: { reason: 'answered' } });

    const completed = await flow.process('resume');
    expect(completed.status).toBe('completed');
    const step = completed.steps[0];
    // Same attempt, continued: the model read the answer as its next (user) message.
    expect(step).toMatchObject({ status: 'succeeded', attempt: 1 });
    expect(step.output.summary).toMatch(
      /^told: user: A person answered your question \("which file should hold the second line\?"\):\nput it in lines\.txt too/,
    );
    // The finished tool call was not run again.
    expect(lines()).toEqual(['one']);

    const reader = createSqliteStore({ path: flow.database });
    const events = await readAll(reader, flow.runId);
    const kinds = events
      .filter((event) =>
        ['question-ask', 'approval-response', 'run-continue', 'run-end', 'step-start'].includes(event.type),
      )
      .map((event) => event.type);
    expect(kinds).toEqual([
      'step-start',
      'question-ask',
      'run-end',
      'approval-response',
      'run-continue',
      'step-start',
      'run-end',
    ]);
    const starts = events.filter(
      (event): event is Extract<RunEvent, { type: 'step-start' }> => event.type === 'step-start',
    );
    expect(new Set(starts.map((event) => event.executionId)).size).toBe(1);
    expect(await pendingApprovals(reader, flow.runId)).toEqual([]);
    await reader.close();
  }, 60_000);

  it('the turn limit asks whether the step may go on; the answer grants as many turns again', async () => {
    const flow = await setup();
    const waiting = await flow.process('run-turns');
    expect(waiting.status).toBe('waiting');
    expect(lines()).toEqual(['one', 'two']);
    const store = createSqliteStore({ path: flow.database });
    const [question] = await pendingApprovals(store, flow.runId);
    expect(question).toMatchObject({ kind: 'question', cause: 'turns' });
    expect(question?.kind === 'question' && question.question).toMatch(/used all of its 2 turns.*may it go on\?/);
    const limits = (await readAll(store, flow.runId)).filter((event) => event.type === 'limit-reach');
    expect(limits).toMatchObject([{ limit: 'turns', value: 2 }]);
    await store.close();

    await flow.process('respond', 'work', 'yes, finish it');
    const completed = await flow.process('resume');
    expect(completed.status).toBe('completed');
    expect(completed.steps[0].output).toMatchObject({ turns: 3 });
    expect(completed.steps[0].output.summary).toContain('yes, finish it');
    expect(lines()).toEqual(['one', 'two']);
  }, 60_000);
});

describe('the ask policy', () => {
  it('the tool-failure limit asks too; an answer grants as many failures again', async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'stepwise-ask-'));
    const store = createSqliteStore({ path: path.join(directory, 'runs.db') });
    const engine = (script: Parameters<typeof scriptedModel>[0]) =>
      agenticEngine({
        model: scriptedModel(script),
        tools: testTools().registry,
        store,
        workspace: directory,
        tokenEstimator: heuristicEstimator,
        onLimit: 'ask',
        limits: { maxToolFailures: 1 },
      });
    try {
      const plan = { id: 'p', steps: [{ id: 'work', description: 'do it' }] };
      const waiting = await engine([toolCall('fail', { message: 'broken' })]).run(plan).result;
      expect(waiting.status).toBe('waiting');
      const [question] = await pendingApprovals(store, waiting.runId);
      expect(question).toMatchObject({ kind: 'question', cause: 'tool-failures' });
      await respond(store, waiting.runId, { requestId: question?.requestId, answer: 'try once more', by: 'carol' });
      // One failure more is allowed now (the limit is granted again); a second one asks again.
      const again = await engine([toolCall('fail', {}), toolCall('fail', {})]).resume(waiting.runId).result;
      expect(again.status).toBe('waiting');
      const [second] = await pendingApprovals(store, waiting.runId);
      expect(second?.kind === 'question' && second.question).toMatch(/^2 tool calls failed in this step \(limit 2\)/);
      expect(second?.requestId).not.toBe(question?.requestId);
      await respond(store, waiting.runId, { stepId: 'work', answer: 'give up and say so', by: 'carol' });
      const done = await engine(({ request }) => complete(String(request.messages.at(-1)?.content))).resume(
        waiting.runId,
      ).result;
      expect(done.status).toBe('completed');
      expect((done.steps[0]?.output as { summary?: string } | undefined)?.summary).toContain('give up and say so');
    } finally {
      await store.close();
    }
  });

  it('a tool call inside a goal step that would wait for an approval is not run; the model is told so', async () => {
    const tools = testTools();
    const script = scriptedModel(({ call, request }) =>
      call === 0
        ? toolCall('note', { text: 'x' })
        : complete(String(request.messages.findLast((message) => message.role === 'tool')?.content)),
    );
    const engine = agenticEngine({
      model: script,
      tools: tools.registry,
      tokenEstimator: heuristicEstimator,
      approvals: { policy: { effects: { write: 'pause' } } },
    });
    const result = await engine.run({ id: 'p', steps: [{ id: 'work', description: 'write a note' }] }).result;
    expect(result.status).toBe('completed');
    expect(tools.log.calls).toEqual([]);
    expect((result.steps[0]?.output as { summary?: string } | undefined)?.summary).toMatch(
      /^NOT RUN: this call needs a person's approval/,
    );
  });

  it('fails as before by default (E406), and rejects an unknown policy (E601)', async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'stepwise-ask-'));
    const store = createSqliteStore({ path: path.join(directory, 'runs.db') });
    try {
      const engine = agenticEngine({
        model: scriptedModel([blocked('no access')]),
        tools: testTools().registry,
        store,
        workspace: directory,
        tokenEstimator: heuristicEstimator,
      });
      const result = await engine.run({ id: 'p', steps: [{ id: 'work', description: 'do it' }] }).result;
      expect(result.status).toBe('failed');
      expect(result.steps[0]?.error?.code).toBe(ErrorCodes.STEP_BLOCKED);
      expect(await pendingApprovals(store, result.runId)).toEqual([]);
      expect(() =>
        agenticEngine({ model: scriptedModel([]), tools: testTools().registry, onBlocked: 'maybe' as 'ask' }),
      ).toThrow(expect.objectContaining({ code: ErrorCodes.CONFIG_INVALID, location: 'onBlocked' }));
    } finally {
      await store.close();
    }
  });
});
