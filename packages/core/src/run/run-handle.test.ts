import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../errors.js';
import type { RunEvent, RunResult } from '../journal/events.js';
import { foldRun, inFlightSteps } from '../journal/fold-run.js';
import { RunJournal } from '../journal/journal.js';
import { readAll } from '../journal/run-store.js';
import { invokeStep } from '../kernel/invoke-step.js';
import type { Step } from '../plan/plan-schema.js';
import { MemoryStore } from '../store/memory-store.js';
import { chainPlan, createTestTools } from '../testing/fixtures.js';
import { createLazyRunHandle, createRunHandle } from './run-handle.js';
import { finishRun, interruptedAction, reopenRun, startRun } from './run-session.js';

describe('RunJournal and run handles', () => {
  it('gives late iterators the whole journal, then live events, and ends after run-end', async () => {
    const store = new MemoryStore();
    const { registry } = createTestTools();
    const plan = chainPlan(3);
    const journal = await startRun({ store, runId: 'run_handle', plan, engine: 'test' });
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const result: Promise<RunResult> = (async () => {
      const steps = [];
      for (const [index, step] of plan.steps.entries()) {
        if (index === 1) await gate;
        steps.push(
          await invokeStep(step, { attempt: 1, references: 'literal' }, { runId: 'run_handle', journal, registry }),
        );
      }
      return finishRun(journal, { plan, engine: 'test', status: 'completed', steps, durationMs: 1 });
    })();
    const handle = createRunHandle({ runId: 'run_handle', journal, store, result, cancel: () => undefined });
    const seen: RunEvent[] = [];
    const iterating = (async () => {
      for await (const event of handle) seen.push(event);
    })();
    await new Promise((resolve) => setTimeout(resolve, 10));
    release?.();
    await iterating;
    expect(seen.map((event) => event.seq)).toEqual(Array.from({ length: seen.length }, (_, index) => index + 1));
    expect(seen.at(-1)?.type).toBe('run-end');
    expect(seen).toEqual(await readAll(store, 'run_handle'));
    expect((await handle.result).status).toBe('completed');
  });

  it('stops writing once the store refuses its lease, and listeners see only durable events', async () => {
    const store = new MemoryStore();
    const journal = await startRun({
      store,
      runId: 'run_fenced',
      plan: chainPlan(1),
      engine: 'test',
      leaseTtlMs: 60_000,
    });
    const heard: number[] = [];
    journal.subscribe((event) => heard.push(event.seq));
    await store.releaseLease(journal.lease as NonNullable<typeof journal.lease>);
    await store.acquireLease('run_fenced', 'thief', 60_000);
    await expect(journal.record({ type: 'run-resume', owner: 'x', interrupted: [] })).rejects.toMatchObject({
      code: ErrorCodes.LEASE_CONFLICT,
    });
    expect(heard).toEqual([]);
    expect((await readAll(store, 'run_fenced')).length).toBe(1);
  });

  it('folds a crashed journal into in-flight steps and the right resume action', async () => {
    const store = new MemoryStore();
    const plan = chainPlan(3, 'note');
    const journal = new RunJournal({ runId: 'run_crash', store });
    journal.emit({ type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test' });
    journal.emit({ type: 'step-start', stepId: 's0', tool: 'note', attempt: 1, executionId: 'e0' });
    journal.emit({
      type: 'tool-call',
      stepId: 's0',
      executionId: 'e0',
      attempt: 1,
      tool: 'note',
      effect: 'write',
      idempotent: false,
      args: { text: 'a' },
    });
    journal.emit({ type: 'step-start', stepId: 's1', tool: 'note', attempt: 1, executionId: 'e1' });
    journal.emit({ type: 'step-start', stepId: 's2', tool: 'echo', attempt: 1, executionId: 'e2' });
    journal.emit({
      type: 'tool-call',
      stepId: 's2',
      executionId: 'e2',
      attempt: 1,
      tool: 'echo',
      effect: 'read',
      idempotent: true,
      args: {},
    });
    journal.emit({
      type: 'tool-result',
      stepId: 's2',
      executionId: 'e2',
      tool: 'echo',
      status: 'succeeded',
      output: { value: 1 },
      startedAt: '',
      durationMs: 1,
    });
    await journal.flush();
    const run = foldRun(await readAll(store, 'run_crash'));
    const actions = Object.fromEntries(inFlightSteps(run).map((step) => [step.stepId, interruptedAction(step, false)]));
    expect(actions).toEqual({ s0: 'fail', s1: 'rerun', s2: 'finish' });
    expect(interruptedAction(run.steps.get('s0') as NonNullable<ReturnType<typeof run.steps.get>>, true)).toBe('rerun');
    const reopened = await reopenRun({ store, runId: 'run_crash' });
    expect(reopened.run.lastSeq).toBe(7);
    await reopened.journal.close();
    await expect(reopenRun({ store, runId: 'run_missing' })).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });
  });
});

describe('createLazyRunHandle', () => {
  it('works destructured, keeps the store and journal private, and replays a run that had ended', async () => {
    const store = new MemoryStore();
    const { registry } = createTestTools();
    const plan = chainPlan(1);
    const journal = await startRun({ store, runId: 'run_lazy', plan, engine: 'test' });
    const live: string[] = [];
    const cancelled: string[] = [];
    const journalReady = Promise.resolve(journal);
    const result = (async () => {
      await journalReady;
      const step = await invokeStep(
        plan.steps[0] as Step,
        { attempt: 1, references: 'literal' },
        { runId: 'run_lazy', journal, registry },
      );
      return finishRun(journal, { plan, engine: 'test', status: 'completed', steps: [step], durationMs: 1 });
    })();
    const handle = createLazyRunHandle(
      { runId: 'run_lazy', store, journal: journalReady, result, cancel: (reason) => cancelled.push(reason ?? '') },
      { progress: () => 'extra' },
    );
    const { onLive, cancel, runId, progress } = handle;
    const remove = onLive((event) => live.push(event.type));
    expect(typeof remove).toBe('function');
    cancel('why');
    expect(cancelled).toEqual(['why']);
    expect(runId).toBe('run_lazy');
    expect(progress()).toBe('extra');
    expect(Object.keys(handle).sort()).toEqual(['cancel', 'progress', 'result', 'runId']);
    expect(handle.onLive).toBe(onLive);
    const seen: RunEvent[] = [];
    for await (const event of handle) seen.push(event);
    expect(seen).toEqual(await readAll(store, 'run_lazy'));
    expect(seen.at(-1)?.type).toBe('run-end');
    // A session that had already ended (no live journal): iteration reads the recorded journal.
    const ended = createLazyRunHandle({
      runId: 'run_lazy',
      store,
      journal: Promise.resolve(undefined),
      result,
      cancel,
    });
    const replayed: RunEvent[] = [];
    for await (const event of ended) replayed.push(event);
    expect(replayed).toEqual(seen);
  });
});

describe('journal redaction', () => {
  it('redacts payloads but keeps the envelope ids the fold relies on', async () => {
    const { createRedactor } = await import('../journal/redact.js');
    const store = new MemoryStore();
    const redactor = createRedactor({ secrets: ['s3cret-value'] });
    const journal = new RunJournal({ runId: 'run_env', store, redactor });
    const plan = chainPlan(1);
    journal.emit({ type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test' });
    journal.emit({ type: 'step-start', stepId: 's0', tool: 'echo', attempt: 1, executionId: 'e0' });
    journal.emit({
      type: 'tool-call',
      stepId: 's0',
      executionId: 'e0',
      attempt: 1,
      tool: 'echo',
      effect: 'read',
      idempotent: true,
      args: { value: 'pass s3cret-value', token: 'abc' },
    });
    journal.emit({
      type: 'step-end',
      stepId: 's0',
      result: {
        stepId: 's0',
        tool: 'echo',
        status: 'failed',
        error: { code: 'E300', message: 'leaked s3cret-value', retryable: false },
        executionId: 'e0',
        attempt: 1,
        startedAt: 'now',
        durationMs: 1,
      },
    });
    await journal.flush();
    const events = await readAll(store, 'run_env');
    expect(JSON.stringify(events)).not.toContain('s3cret-value');
    expect(events[2]).toMatchObject({ stepId: 's0', executionId: 'e0', args: { token: '[REDACTED]' } });
    expect(events[3]).toMatchObject({ result: { stepId: 's0', error: { message: 'leaked [REDACTED]' } } });
  });
});

describe('RunJournal.emit', () => {
  it('never changes an event that is already in the journal when it is emitted again', async () => {
    const store = new MemoryStore();
    const journal = new RunJournal({ runId: 'run_reemit', store });
    const plan = chainPlan(1);
    const first = journal.emit({ type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test' });
    const again = journal.emit(first as never);
    await journal.flush();
    const events = await readAll(store, 'run_reemit');
    expect(events.map((event) => event.seq)).toEqual([1, 2]);
    expect(first.seq).toBe(1);
    expect(again.seq).toBe(2);
  });
});

describe('RunJournal.flush', () => {
  /** A MemoryStore whose appends settle only when the test says so. */
  function gatedStore() {
    const store = new MemoryStore();
    const gates: (() => void)[] = [];
    const batches: number[][] = [];
    const append = store.append.bind(store);
    store.append = async (runId, events, lease) => {
      batches.push(events.map((event) => event.seq));
      await new Promise<void>((resolve) => gates.push(resolve));
      return append(runId, events, lease);
    };
    return { store, gates, batches };
  }
  const note = (index: number) =>
    ({ type: 'progress-report', stepId: 's0', executionId: 'e0', percent: index }) as const;

  it('appends batches in seq order when flushes overlap, also from a listener', async () => {
    const { store, gates, batches } = gatedStore();
    const journal = new RunJournal({ runId: 'run_order', store });
    const plan = chainPlan(1);
    journal.emit({ type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test' });
    const first = journal.flush(); // idle: appended at once
    journal.emit(note(1));
    const second = journal.flush(); // waits for the first
    let fromListener: Promise<void> | undefined;
    let secondDone = false;
    second.then(() => {
      secondDone = true;
    });
    journal.subscribe((event) => {
      if (event.seq !== 1) return;
      // The first batch is durable and the second has not started: this event joins it.
      journal.emit(note(2));
      fromListener = journal.flush();
    });
    expect(batches).toEqual([[1]]);
    gates.shift()?.();
    await first;
    // The queued batch starts once the first settled and the ready promise chains ran.
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1], [2, 3]]);
    expect(secondDone).toBe(false);
    gates.shift()?.();
    await Promise.all([second, fromListener]);
    expect(batches).toEqual([[1], [2, 3]]);
    expect((await readAll(store, 'run_order')).map((event) => event.seq)).toEqual([1, 2, 3]);
  });

  const stepStart = (stepId: string) =>
    ({ type: 'step-start', stepId, tool: 'echo', attempt: 1, executionId: `e_${stepId}` }) as const;
  const stepEnd = (stepId: string) =>
    ({
      type: 'step-end',
      stepId,
      result: {
        stepId,
        tool: 'echo',
        status: 'succeeded',
        executionId: `e_${stepId}`,
        attempt: 1,
        startedAt: '',
        durationMs: 0,
      },
    }) as const;

  it('commits concurrent steps together, and each flush resolves only once its events are durable', async () => {
    const { store, gates, batches } = gatedStore();
    const journal = new RunJournal({ runId: 'run_group', store });
    const plan = chainPlan(3);
    await (async () => {
      journal.emit({ type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test' });
      const started = journal.flush();
      gates.shift()?.();
      await started;
    })();
    for (const id of ['s0', 's1', 's2']) journal.emit(stepStart(id));
    const settled: string[] = [];
    const flushes = ['s0', 's1', 's2'].map((id) => {
      journal.emit(stepEnd(id));
      return journal.flush().then(() => settled.push(id));
    });
    // Three open steps: nothing is appended synchronously; then all six events in one append.
    expect(batches).toEqual([[1]]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1], [2, 3, 4, 5, 6, 7]]);
    expect(settled).toEqual([]);
    gates.shift()?.();
    await Promise.all(flushes);
    expect(settled).toEqual(['s0', 's1', 's2']);
    expect((await readAll(store, 'run_group')).map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('appends at once, in the same turn, when only one step is open (a chain)', async () => {
    const { store, gates, batches } = gatedStore();
    const journal = new RunJournal({ runId: 'run_chain', store });
    const plan = chainPlan(1);
    journal.emit({ type: 'run-start', planId: plan.id, planDigest: 'd', plan, engine: 'test' });
    journal.emit(stepStart('s0'));
    const flushed = journal.flush();
    expect(batches).toEqual([[1, 2]]);
    gates.shift()?.();
    await flushed;
    journal.emit(stepEnd('s0'));
    const ended = journal.flush();
    expect(batches).toEqual([[1, 2], [3]]);
    gates.shift()?.();
    await ended;
  });

  it('refuses every later flush once the store refused a batch, idle or queued', async () => {
    const store = new MemoryStore();
    const journal = new RunJournal({ runId: 'run_refused', store, lastSeq: 5 }); // the store expects seq 1
    journal.emit(note(1));
    await expect(journal.flush()).rejects.toMatchObject({ code: ErrorCodes.JOURNAL_CONFLICT });
    journal.emit(note(2));
    await expect(journal.flush()).rejects.toMatchObject({ code: ErrorCodes.JOURNAL_CONFLICT });
    expect(await readAll(store, 'run_refused')).toEqual([]);
  });
});
