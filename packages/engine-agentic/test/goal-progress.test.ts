import { ErrorCodes, MemoryStore, type RunEvent, readAll, StepwiseError } from '@stepwise/core';
import { foldRun, type Lease } from '@stepwise/core/store';
import { afterEach, describe, expect, it } from 'vitest';
import { analysis, complete, scriptedModel, toolCall } from '../src/testing/index.js';
import { goalPlan, nodeToolRegistry, ofType, tempWorkspace, testEngine, testTools } from './helpers.js';

/** A MemoryStore whose process "dies" at the first batch `dies` picks: that batch and every later one are refused. */
class DyingStore extends MemoryStore {
  #dead = false;
  #dies: (events: readonly RunEvent[]) => boolean;
  constructor(dies: (events: readonly RunEvent[]) => boolean) {
    super();
    this.#dies = dies;
  }
  override append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    if (this.#dead || this.#dies(events)) {
      this.#dead = true;
      return Promise.reject(new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'the process died'));
    }
    return super.append(runId, events, lease);
  }
  /** The same journal, alive for good (as another process opening the store would see it). */
  revive(): void {
    this.#dead = false;
    this.#dies = () => false;
  }
}

describe('goal progress', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('journals every turn: decision, the model’s words, its goals and the criteria met so far', async () => {
    const workspace = await tempWorkspace();
    cleanups.push(workspace.cleanup);
    const tools = await nodeToolRegistry(workspace.dir);
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', arguments: { value: 'look around' } }, { name: 'no_such_tool' }] },
      analysis('  The report is missing; I will write it next.  '),
      complete('report done', { goals: [{ goal: 'write the report', status: 'in_progress' }] }),
      toolCall('file_write', { path: 'report.txt', contents: 'PASS' }),
      complete('report done', { goals: [{ goal: 'write the report', status: 'achieved', progress: 'written' }] }),
    ]);
    const { engine, events } = testEngine({ model, tools: tools.registry, workspace: workspace.dir });
    const result = await engine.run(
      goalPlan([
        {
          id: 'report',
          description: 'write the report',
          expect: [
            { kind: 'file_exists', path: 'report.txt' },
            { kind: 'output_matches', pattern: 'report done' },
          ],
        },
      ]),
    ).result;
    expect(result.status).toBe('completed');

    const progress = ofType(events, 'goal-progress');
    expect(progress.map((event) => [event.stepId, event.attempt, event.turn, event.decision])).toEqual([
      ['report', 1, 1, 'command'],
      ['report', 1, 2, 'analyze'],
      ['report', 1, 3, 'complete'],
      ['report', 1, 4, 'command'],
      ['report', 1, 5, 'complete'],
    ]);
    expect(progress.map((event) => event.note)).toEqual([
      undefined,
      'The report is missing; I will write it next.',
      undefined,
      undefined,
      undefined,
    ]);
    expect(progress.map((event) => [event.toolCalls, event.toolFailures])).toEqual([
      [2, 1],
      [0, 1],
      [0, 1],
      [1, 1],
      [0, 1],
    ]);
    expect(progress.map((event) => event.goals?.map((goal) => goal.status))).toEqual([
      undefined,
      undefined,
      ['in_progress'],
      ['in_progress'],
      ['achieved'],
    ]);
    // Criteria stay unchecked until the model first claims completion, then keep their last checked state.
    expect(progress.map((event) => event.criteria.map((criterion) => criterion.status))).toEqual([
      ['unchecked', 'unchecked'],
      ['unchecked', 'unchecked'],
      ['unmet', 'met'],
      ['unmet', 'met'],
      ['met', 'met'],
    ]);
    expect(progress[2]?.criteria[0]).toEqual({
      criterion: 'the file report.txt exists',
      status: 'unmet',
      message: 'the file report.txt does not exist',
    });

    // Each turn's progress comes after its model call and its tool results, before the next model call.
    const modelCalls = ofType(events, 'model-call');
    for (const event of progress) {
      expect(event.seq).toBeGreaterThan(modelCalls[event.turn - 1]!.seq);
      const next = modelCalls[event.turn];
      if (next) expect(event.seq).toBeLessThan(next.seq);
      for (const resultEvent of ofType(events, 'tool-result')) {
        if (resultEvent.seq > modelCalls[event.turn - 1]!.seq && (!next || resultEvent.seq < next.seq)) {
          expect(resultEvent.seq).toBeLessThan(event.seq);
        }
      }
    }
    const stepEnd = ofType(events, 'step-end')[0]!;
    expect(progress.at(-1)!.seq).toBeLessThan(stepEnd.seq);

    // The fold keeps the latest progress per step.
    expect(foldRun(events).steps.get('report')?.goalProgress).toEqual(progress.at(-1));
  });

  it('marks a blocked step with the goals the model reported', async () => {
    const model = scriptedModel([
      {
        text: 'I cannot reach the server.',
        toolCalls: [
          {
            name: 'report_blocked',
            arguments: { reason: 'no network', goals: [{ goal: 'fetch', status: 'blocked', progress: 'offline' }] },
          },
        ],
      },
    ]);
    const { engine, events } = testEngine({ model, tools: testTools().registry });
    const result = await engine.run(goalPlan([{ id: 'fetch' }])).result;
    expect(result.steps[0]?.error?.code).toBe(ErrorCodes.STEP_BLOCKED);
    expect(ofType(events, 'goal-progress')).toMatchObject([
      {
        turn: 1,
        decision: 'blocked',
        note: 'I cannot reach the server.',
        goals: [{ goal: 'fetch', status: 'blocked', progress: 'offline' }],
        criteria: [],
        toolCalls: 0,
      },
    ]);
  });

  it('cuts a long note; the model call keeps the whole text', async () => {
    const long = 'x'.repeat(2000);
    const model = scriptedModel([analysis(long), complete('done')]);
    const { engine, events } = testEngine({ model, tools: testTools().registry });
    await engine.run(goalPlan([{ id: 'think' }])).result;
    const note = ofType(events, 'goal-progress')[0]?.note ?? '';
    expect(note.length).toBe(500);
    expect(note.endsWith('…')).toBe(true);
    expect(ofType(events, 'model-call')[0]?.response).toMatchObject({ text: long });
  });

  it('after a crash, resume journals the progress of the replayed turn once and goes on from there', async () => {
    const tools = testTools();
    const plan = goalPlan([{ id: 'work' }]);
    // Turn 2's progress is buffered with turn 3's model call; that batch dies: neither reaches the store.
    const store = new DyingStore((events) => events.some((event) => event.type === 'model-call' && event.turn === 3));
    const before = scriptedModel([
      toolCall('echo', { value: 'one' }),
      toolCall('echo', { value: 'two' }),
      toolCall('echo', { value: 'never' }),
    ]);
    const first = testEngine({ model: before, tools: tools.registry, store, leaseTtlMs: 500 });
    const crashed = await first.engine.run(plan, { runId: 'run_progress' }).result.catch((error: unknown) => error);
    expect(crashed).toMatchObject({ code: ErrorCodes.STORE_UNAVAILABLE });
    const journaled = await readAll(store, 'run_progress');
    expect(ofType(journaled, 'goal-progress').map((event) => event.turn)).toEqual([1]);

    store.revive();
    const after = scriptedModel([complete('finished')]);
    const second = testEngine({ model: after, tools: tools.registry, store });
    let resumed: Awaited<ReturnType<typeof second.engine.run>['result']> | undefined;
    for (let tries = 0; !resumed; tries++) {
      try {
        resumed = await second.engine.resume('run_progress').result;
      } catch (error) {
        // The dead process's lease has to expire first.
        if (!(StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT) || tries > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    expect(resumed.status).toBe('completed');
    // Turn two's echo ran once, before the crash; its result was replayed, not run again.
    expect(tools.log.calls.map((call) => call.args)).toEqual([{ value: 'one' }, { value: 'two' }]);

    const events = await readAll(store, 'run_progress');
    const progress = ofType(events, 'goal-progress');
    expect(progress.map((event) => [event.turn, event.decision])).toEqual([
      [1, 'command'],
      [2, 'command'],
      [3, 'complete'],
    ]);
    expect(foldRun(events).steps.get('work')?.goalProgress?.turn).toBe(3);
  });
});
