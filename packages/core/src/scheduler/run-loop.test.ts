import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes } from '../errors.js';
import { makePlan } from '../testing/fixtures.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';
import { openTestSession, testPolicy } from './test-session.js';

const diamond = makePlan([
  { id: 'a', tool: 'echo' },
  { id: 'b', tool: 'echo', dependsOn: ['a'] },
  { id: 'c', tool: 'echo', dependsOn: ['a'] },
  { id: 'd', tool: 'echo', dependsOn: ['b', 'c'] },
  { id: 'e', tool: 'echo' },
]);

describe('RunLoop', () => {
  it('queues released steps whose dependencies are done, blocks the rest, and starts them lowest index first', async () => {
    const session = await openTestSession(diamond, { policy: testPolicy({ concurrency: 1 }) });
    const { board, loop, started } = session;
    for (const slot of [...board.slots].reverse()) loop.release(slot);
    expect(board.slots.map((slot) => slot.status)).toEqual(['ready', 'blocked', 'blocked', 'blocked', 'ready']);
    expect(started).toEqual([
      { stepId: 'e', attempt: 1 },
      { stepId: 'a', attempt: 1 },
    ]);
  });

  it('advances the graph: a dependent starts once its last dependency succeeded', async () => {
    const session = await openTestSession(diamond);
    const { board, loop, started, result } = session;
    for (const slot of board.slots) loop.release(slot);
    loop.advance(board.slot(0), result('a', 'succeeded', { output: { value: 1 } }));
    expect(started.map((entry) => entry.stepId)).toEqual(['a', 'e', 'b', 'c']);
    loop.advance(board.slot(1), result('b', 'succeeded'));
    expect(board.slot(3).status).toBe('blocked');
    loop.advance(board.slot(2), result('c', 'succeeded'));
    expect(started.at(-1)).toEqual({ stepId: 'd', attempt: 1 });
    expect(board.outputs.get('a')).toEqual({ value: 1 });
    expect(board.done).toBe(3);
  });

  it('skips the transitive dependents of a failed step (E310) and journals their ends', async () => {
    const session = await openTestSession(diamond);
    const { board, loop, started, result } = session;
    for (const slot of board.slots) loop.release(slot);
    loop.advance(board.slot(0), result('a', 'failed', { error: { code: 'E304', message: 'no', retryable: false } }));
    expect(started.map((entry) => entry.stepId)).toEqual(['a', 'e']);
    const ends = (await session.events()).filter((event) => event.type === 'step-end');
    expect(ends.map((event) => [event.stepId, event.result.status, event.result.error?.code])).toEqual([
      ['b', 'skipped', ErrorCodes.DEPENDENCY_FAILED],
      ['c', 'skipped', ErrorCodes.DEPENDENCY_FAILED],
      ['d', 'skipped', ErrorCodes.DEPENDENCY_FAILED],
    ]);
    expect(board.done).toBe(4);
  });

  it('starts nothing and advances nothing during an exclusive section; both happen once it is over', async () => {
    const session = await openTestSession(diamond);
    const { board, loop, started, result } = session;
    let release: () => void = () => undefined;
    const section = loop.exclusive(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    await new Promise((resolve) => setTimeout(resolve, 0));
    for (const slot of board.slots) loop.release(slot);
    expect(started).toEqual([]);
    loop.advance(board.slot(0), result('a', 'succeeded'));
    expect(board.slot(0).result).toBeUndefined();
    release();
    await section;
    expect(board.slot(0).result?.status).toBe('succeeded');
    expect(started.map((entry) => entry.stepId).sort()).toEqual(['a', 'b', 'c', 'e']);
  });

  it('counts a per-tool limit under the canonical name when a plan names the tool by an alias', async () => {
    const tools = new ToolRegistry([
      defineTool({ name: 'shell', description: 'runs', input: z.object({}), effect: 'exec', execute: () => ({}) }),
    ]);
    tools.alias('sh', 'shell');
    const plan = makePlan([
      { id: 'one', tool: 'shell' },
      { id: 'two', tool: 'sh' },
      { id: 'three', tool: 'echo' },
    ]);
    const session = await openTestSession(plan, { tools, policy: testPolicy({ toolConcurrency: { shell: 1 } }) });
    // The fake runner frees each slot at once: keep the first shell step's slot taken until the test frees it.
    const { board, loop, started } = session;
    const free = loop.free.bind(loop);
    let held: Parameters<typeof free>[0] | undefined;
    loop.free = (queued) => {
      if (queued.slot.step.id === 'one') held = queued;
      else free(queued);
    };
    for (const slot of board.slots) loop.release(slot);
    expect(started.map((entry) => entry.stepId)).toEqual(['one', 'three']);
    free(held as Parameters<typeof free>[0]);
    expect(started.map((entry) => entry.stepId)).toEqual(['one', 'three', 'two']);
  });
});
