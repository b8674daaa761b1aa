import { ErrorCodes, MemoryStore, type RunEvent, type RunStore, readAll, StepwiseError } from '@stepwise/core';
import type { Lease } from '@stepwise/core/store';
import { describe, expect, it } from 'vitest';
import { complete, latestToolResults, scriptedModel, toolCall } from '../src/testing/index.js';
import { goalPlan, ofType, testEngine, testTools } from './helpers.js';

/** A MemoryStore that dies (refuses every append from then on) when `crashOn` says so: a crash, in-process. */
function crashingStore(inner: MemoryStore, crashOn: (events: readonly RunEvent[]) => boolean): RunStore {
  let crashed = false;
  return {
    append(runId: string, events: readonly RunEvent[], lease?: Lease) {
      if (crashed || crashOn(events)) {
        crashed = true;
        return Promise.reject(new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'the process died'));
      }
      return inner.append(runId, events, lease);
    },
    read: (runId, afterSeq) => inner.read(runId, afterSeq),
    getRun: (runId) => inner.getRun(runId),
    listRuns: (filter) => inner.listRuns(filter),
    getExecution: (executionId) => inner.getExecution(executionId),
    acquireLease: (runId, owner, ttlMs) => inner.acquireLease(runId, owner, ttlMs),
    renewLease: (lease) => inner.renewLease(lease),
    releaseLease: (lease) => inner.releaseLease(lease),
    close: () => inner.close(),
  };
}

async function resumeWhenLeaseExpires<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(StepwiseError.isInstance(error) && error.code === ErrorCodes.LEASE_CONFLICT) || tries > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

describe('resume of a goal step', () => {
  it('continues after the last completed turn: no model call and no finished tool call repeats', async () => {
    const memory = new MemoryStore();
    const tools = testTools();
    const plan = goalPlan([
      { id: 'prep', tool: 'echo', args: { value: 'prepared' } },
      { id: 'work', dependsOn: ['prep'] },
    ]);
    const before = scriptedModel([
      toolCall('echo', { value: 'turn one' }),
      {
        toolCalls: [
          { name: 'echo', arguments: { value: 'turn two' } },
          { name: 'note', arguments: { text: 'never journaled before the crash' } },
        ],
      },
    ]);
    // The process "dies" as the note's tool-call is about to become durable, so the note never ran.
    const store = crashingStore(memory, (events) =>
      events.some((event) => event.type === 'tool-call' && event.tool === 'note'),
    );
    const first = testEngine({ model: before, tools: tools.registry, store: store as MemoryStore, leaseTtlMs: 500 });
    const crashed = await first.engine.run(plan, { runId: 'run_crash' }).result.catch((error: unknown) => error);
    expect(crashed).toMatchObject({ code: ErrorCodes.STORE_UNAVAILABLE });
    expect(before.calls).toBe(2);
    expect(tools.log.calls.map((call) => call.tool)).toEqual(['echo', 'echo', 'echo']);

    const after = scriptedModel(({ request }) => {
      // The rebuilt conversation holds both earlier turns and the results of turn two.
      const toolResults = request.messages
        .filter((message) => message.role === 'tool')
        .map((message) => message.content);
      expect(toolResults).toEqual(['{"value":"turn one"}', '{"value":"turn two"}', '{"written":32}']);
      expect(request.messages[1]?.content).toContain('- prep: {"value":"prepared"}');
      return complete('resumed and finished');
    });
    const second = testEngine({ model: after, tools: tools.registry, store: memory });
    const result = await resumeWhenLeaseExpires(() => second.engine.resume('run_crash').result);

    expect(result.status).toBe('completed');
    expect(result.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['prep', 'succeeded'],
      ['work', 'succeeded'],
    ]);
    expect(after.calls).toBe(1);
    expect(latestToolResults(after.requests[0]!).map((entry) => entry.name)).toEqual(['echo', 'note']);
    // echo: the prep step, turn one, turn two, each once; the note ran once, after resume.
    expect(tools.log.calls.map((call) => call.tool)).toEqual(['echo', 'echo', 'echo', 'note']);

    const events = await readAll(memory, 'run_crash');
    expect(ofType(events, 'run-resume')).toMatchObject([{ interrupted: [{ stepId: 'work', action: 'rerun' }] }]);
    const modelCalls = ofType(events, 'model-call');
    expect(modelCalls.map((event) => event.turn)).toEqual([1, 2, 3]);
    expect(ofType(events, 'step-start').filter((event) => event.stepId === 'work')).toHaveLength(1);
    expect(result.steps[1]?.output).toMatchObject({ summary: 'resumed and finished', turns: 3 });
    expect(result.steps[1]?.usage?.totalTokens).toBe(
      modelCalls.reduce((sum, event) => sum + (event.usage?.totalTokens ?? 0), 0),
    );
  });

  it('returns the recorded result when the run already ended', async () => {
    const model = scriptedModel([complete('done')]);
    const { engine } = testEngine({ model, tools: testTools().registry });
    const original = await engine.run(goalPlan([{ id: 'x' }]), { runId: 'run_done' }).result;
    const again = await engine.resume('run_done').result;
    expect(again).toMatchObject({ runId: 'run_done', status: original.status });
    expect(model.calls).toBe(1);
  });

  it('rejects resuming a run that does not exist with E505', async () => {
    const { engine } = testEngine({ model: scriptedModel([]), tools: testTools().registry });
    await expect(engine.resume('run_missing').result).rejects.toMatchObject({ code: ErrorCodes.RUN_NOT_FOUND });
  });
});
