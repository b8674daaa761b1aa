import { ErrorCodes, MemoryStore, type RunEvent, type RunStore, readAll } from '@stepwise/core';
import type { RunEventInput } from '@stepwise/core/engine';
import { seededRandom } from '@stepwise/core/testing';
import { describe, expect, it } from 'vitest';
import { createSqliteStore, type SqliteStore } from '../src/index.js';
import { expectProjectionsMatchFold } from './fold-expectations.js';
import { stamp } from './helpers.js';

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const chance = (random: Random, probability: number) => random() < probability;
const text = (random: Random, max: number) => 'abcdefghij'.repeat(30).slice(0, Math.floor(random() * max));

/** Any JSON value: small or (for the 64-byte threshold below) large, nested or flat. */
function value(random: Random, depth = 0): unknown {
  const kind = Math.floor(random() * (depth > 2 ? 4 : 6));
  switch (kind) {
    case 0:
      return text(random, 200);
    case 1:
      return Math.floor(random() * 1000) - 500;
    case 2:
      return chance(random, 0.5);
    case 3:
      return null;
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => value(random, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(random() * 4) }, (_, index) => [`k${index}`, value(random, depth + 1)]),
      );
  }
}

const usage = (random: Random) =>
  chance(random, 0.7)
    ? { promptTokens: Math.floor(random() * 100), completionTokens: Math.floor(random() * 50), totalTokens: 7 }
    : undefined;

/** A random but well-formed event for `runId`; execution ids are shared between runs now and then. */
function randomEvent(random: Random, runId: string): RunEventInput {
  const stepId = pick(random, ['a', 'b', 'c', 'extra']);
  const attempt = 1 + Math.floor(random() * 2);
  const executionId = chance(random, 0.1)
    ? 'ex_shared'
    : `ex_${runId}_${stepId}_${attempt}_${Math.floor(random() * 2)}`;
  const status = pick(random, ['succeeded', 'failed', 'cancelled'] as const);
  const error =
    status === 'succeeded'
      ? undefined
      : {
          code: 'E304' as const,
          message: text(random, 90),
          retryable: false,
          details: chance(random, 0.5) ? { exitCode: 3 } : undefined,
        };
  const artifacts = chance(random, 0.4)
    ? Array.from({ length: 1 + Math.floor(random() * 2) }, () => ({
        kind: pick(random, ['stdout', 'stderr', 'diagnostics']),
        content: text(random, 300),
        ...(chance(random, 0.3) ? { name: 'out.txt', mediaType: 'text/plain', truncated: chance(random, 0.5) } : {}),
      }))
    : undefined;
  const type = pick(random, [
    'step-start',
    'tool-call',
    'tool-result',
    'tool-result',
    'step-end',
    'step-end',
    'approval-request',
    'approval-decision',
    'step-retry',
    'model-call',
    'progress-report',
    'limit-reach',
    'recovery-decision',
    'run-resume',
    'run-end',
  ] as const);
  switch (type) {
    case 'step-start':
      return { type, stepId, tool: chance(random, 0.8) ? 'echo' : undefined, attempt, executionId };
    case 'tool-call':
      return {
        type,
        stepId,
        executionId,
        attempt,
        tool: 'echo',
        effect: pick(random, ['read', 'write', 'exec'] as const),
        idempotent: chance(random, 0.5),
        args: { value: value(random) },
        ...(chance(random, 0.2) ? { turn: Math.floor(random() * 5) } : {}),
      };
    case 'tool-result':
      return {
        type,
        stepId,
        executionId,
        tool: 'echo',
        status,
        ...(status === 'succeeded'
          ? { output: chance(random, 0.3) ? { exitCode: 0, value: value(random) } : value(random) }
          : {}),
        ...(error ? { error } : {}),
        ...(artifacts ? { artifacts } : {}),
        startedAt: new Date().toISOString(),
        durationMs: Math.floor(random() * 100),
      };
    case 'step-end':
      return {
        type,
        stepId,
        result: {
          stepId,
          tool: 'echo',
          status: pick(random, ['succeeded', 'failed', 'skipped', 'denied', 'cancelled'] as const),
          ...(chance(random, 0.5) ? { output: value(random) } : {}),
          ...(error ? { error } : {}),
          executionId,
          attempt,
          startedAt: new Date().toISOString(),
          durationMs: Math.floor(random() * 100),
          ...(artifacts ? { artifacts } : {}),
        },
      };
    case 'approval-request':
      return {
        type,
        stepId,
        executionId,
        tool: 'echo',
        effect: 'write',
        args: { value: value(random) },
        reason: 'policy',
      };
    case 'approval-decision':
      return {
        type,
        stepId,
        executionId,
        tool: 'echo',
        decision: pick(random, ['approved', 'denied', 'skipped'] as const),
        source: pick(random, ['handler', 'policy', 'fallback'] as const),
        ...(chance(random, 0.5) ? { by: 'bob', reason: text(random, 40) } : {}),
      };
    case 'step-retry':
      return {
        type,
        stepId,
        attempt,
        nextAttempt: attempt + 1,
        delayMs: 5,
        error: error ?? { code: 'E300', message: 'x', retryable: true },
      };
    case 'model-call':
      return {
        type,
        stepId,
        turn: Math.floor(random() * 4),
        model: 'scripted',
        request: value(random),
        ...(chance(random, 0.7) ? { response: value(random) } : {}),
        ...(usage(random) ? { usage: usage(random) } : {}),
        latencyMs: 3,
      };
    case 'progress-report':
      return { type, stepId, executionId, percent: 50, message: text(random, 20) };
    case 'limit-reach':
      return { type, stepId, limit: 'turns', value: 10 };
    case 'recovery-decision':
      return { type, stepId, attempt, decision: 'retry', args: { value: value(random) } };
    case 'run-resume':
      return { type, owner: 'someone', interrupted: [] };
    default:
      return {
        type: 'run-end',
        status: pick(random, ['completed', 'failed', 'waiting'] as const),
        durationMs: 42,
        ...(chance(random, 0.5)
          ? { usage: usage(random) ?? { promptTokens: 1, completionTokens: 1, totalTokens: 2 } }
          : {}),
      };
  }
}

function runStart(random: Random, runId: string): RunEventInput {
  const ids = ['a', 'b', 'c', ...(chance(random, 0.3) ? ['a'] : [])];
  return {
    type: 'run-start',
    planId: pick(random, ['plan_one', 'plan_two']),
    planDigest: 'digest',
    plan: {
      id: 'plan',
      version: 1,
      ...(chance(random, 0.7) ? { goal: `goal of ${runId}` } : {}),
      steps: ids.map((id, index) => ({
        id,
        tool: 'echo',
        ...(chance(random, 0.6) ? { description: `step ${id} #${index}` } : {}),
      })),
      // A large plan goes to `blobs` like any other large value.
      ...(chance(random, 0.3) ? { notes: text(random, 300) } : {}),
    } as never,
    engine: 'dag',
    ...(chance(random, 0.3)
      ? {
          authorization: {
            id: 'auth',
            planId: 'plan',
            planDigest: 'digest',
            by: 'alice',
            at: new Date().toISOString(),
          },
        }
      : {}),
    ...(chance(random, 0.2) ? { parentRunId: 'run_parent' } : {}),
    ...(chance(random, 0.3) ? { options: { concurrency: 2 } } : {}),
  };
}

async function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? String(error),
  );
}

describe('SQLite store against MemoryStore (the reference) on random journals', () => {
  it.each([1, 2, 3, 4, 5, 6])('agrees on every read for seed %i', async (seed) => {
    const random = seededRandom(seed);
    const memory: RunStore = new MemoryStore();
    // A tiny threshold: most outputs, artifacts, arguments, plans and model traffic go to `blobs`.
    const sqlite: SqliteStore = createSqliteStore({ path: ':memory:', artifactThresholdBytes: 64 });
    const runIds = ['run_x', 'run_y', 'run_z'];
    const lastSeq = new Map(runIds.map((runId) => [runId, 0]));
    const lastCaller = new Map<string, string>();
    for (let batchIndex = 0; batchIndex < 120; batchIndex++) {
      const runId = pick(random, runIds);
      const seq = lastSeq.get(runId) as number;
      const inputs: RunEventInput[] = [];
      const size = 1 + Math.floor(random() * 4);
      for (let index = 0; index < size; index++) {
        inputs.push(seq + index === 0 || chance(random, 0.02) ? runStart(random, runId) : randomEvent(random, runId));
      }
      let batch = stamp(runId, seq + 1, inputs);
      const broken = chance(random, 0.08);
      if (broken)
        batch = batch.map((event, index) => (index === batch.length - 1 ? { ...event, seq: event.seq + 1 } : event));
      const results = [await outcome(memory.append(runId, batch)), await outcome(sqlite.append(runId, batch))];
      expect(results[1]).toBe(results[0]);
      expect(results[0]).toBe(broken ? ErrorCodes.JOURNAL_CONFLICT : 'ok');
      if (!broken) {
        lastSeq.set(runId, seq + batch.length);
        for (const event of batch) if (event.type === 'tool-call') lastCaller.set(event.executionId, runId);
      }
    }

    for (const runId of runIds) {
      const journal = await readAll(memory, runId);
      const stored = await readAll(sqlite, runId);
      // Same events, same key order, byte for byte.
      expect(JSON.stringify(stored)).toBe(JSON.stringify(journal));
      expect(await sqlite.getRun(runId)).toEqual(await memory.getRun(runId));
      expect(await sqlite.readEvents(runId, 3, 4)).toEqual(journal.slice(3, 7));
      const executionsOfRun = [...lastCaller].filter(([, caller]) => caller === runId).map(([id]) => id);
      await expectProjectionsMatchFold(sqlite, runId, journal, executionsOfRun);
      const callSeq = new Map<string, number>();
      for (const event of journal) if (event.type === 'tool-call') callSeq.set(event.executionId, event.seq);
      const listed = await sqlite.listExecutions(runId);
      expect(listed.map((record) => record.executionId)).toEqual(
        executionsOfRun.sort((a, b) => (callSeq.get(a) as number) - (callSeq.get(b) as number)),
      );
      for (const record of await sqlite.listExecutions(runId, 'b')) expect(record.stepId).toBe('b');
    }
    for (const executionId of [...lastCaller.keys(), 'ex_never']) {
      expect(await sqlite.getExecution(executionId)).toEqual(await memory.getExecution(executionId));
    }
    for (const filter of [
      {},
      { status: 'running' as const },
      { status: ['completed', 'failed'] as const },
      { planId: 'plan_two' },
      { limit: 2 },
      { limit: 1, offset: 1 },
      { status: [] as const },
    ]) {
      expect(await sqlite.listRuns(filter)).toEqual(await memory.listRuns(filter));
    }
    await sqlite.close();
  });
});

describe('reading a long journal', () => {
  it('pages through thousands of events in order', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    const runId = 'run_long';
    const events: RunEvent[] = stamp(runId, 1, [
      { type: 'run-start', planId: 'p', planDigest: 'd', plan: { id: 'p', version: 1, steps: [] }, engine: 'test' },
      ...Array.from({ length: 1_300 }, (_, index) => ({
        type: 'progress-report' as const,
        stepId: 'a',
        executionId: 'ex',
        percent: index % 100,
      })),
    ]);
    await store.append(runId, events);
    const read = await readAll(store, runId);
    expect(read.map((event) => event.seq)).toEqual(events.map((event) => event.seq));
    expect((await readAll(store, runId, 1_250)).map((event) => event.seq)).toEqual(
      Array.from({ length: 51 }, (_, index) => 1_251 + index),
    );
    expect(await store.readEvents(runId, 1_299)).toEqual(events.slice(1_299));
    expect(await store.readEvents(runId, 0, 2)).toEqual(events.slice(0, 2));
    expect(await store.readEvents('run_missing')).toEqual([]);
    await store.close();
  });
});
