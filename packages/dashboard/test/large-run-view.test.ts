import { defineTool, type RunEvent, ToolRegistry } from '@stepwise/core';
import { MemoryStore } from '@stepwise/core/testing';
import { dagEngine } from '@stepwise/engine-dag';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LIVE_PAGE_STEPS } from '../src/runs/focus-model.js';
import { buildRunView } from '../src/runs/run-view.js';

async function chainRun(size: number, failAt?: number): Promise<RunEvent[]> {
  const store = new MemoryStore();
  const tools = new ToolRegistry([
    defineTool({
      name: 'step',
      description: 'fails when told to',
      input: z.object({ fail: z.boolean() }),
      effect: 'read',
      execute: ({ fail }) => {
        if (fail) throw new Error('broken');
        return { ok: true };
      },
    }),
  ]);
  const steps = Array.from({ length: size }, (_, index) => ({
    id: `s${index}`,
    tool: 'step',
    args: { fail: index === failAt },
    critical: false,
    ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
  }));
  const result = await dagEngine({ tools, store }).run({ id: 'long', steps }).result;
  const events: RunEvent[] = [];
  for await (const event of store.read(result.runId)) events.push(event);
  return events;
}

const options = { readOnly: false, canContinue: true };

describe('the live page of a run with many steps', () => {
  it(`draws at most ${LIVE_PAGE_STEPS} steps, the failed one among them, and says how many it left out`, async () => {
    const size = LIVE_PAGE_STEPS + 500;
    const view = buildRunView(await chainRun(size, 10), options);
    const drawn = view.data.steps.map((step) => step.id);
    expect(drawn).toHaveLength(LIVE_PAGE_STEPS);
    // The failed step is early in the plan and long finished, yet shown first of all.
    expect(drawn).toContain('s10');
    expect(view.parts.header).toContain(`This page shows ${LIVE_PAGE_STEPS} of ${size} steps`);
    expect(view.parts.graph.match(/class="node /g)).toHaveLength(LIVE_PAGE_STEPS);
    expect(view.parts.steps.match(/<tr data-step-id=/g)).toHaveLength(LIVE_PAGE_STEPS);
  });

  it("keeps the run's own figures and shows a long critical path by its ends", async () => {
    const size = LIVE_PAGE_STEPS + 200;
    const view = buildRunView(await chainRun(size), options);
    expect(view.parts.header).toMatch(/s0 → s1 → s2 → s3 → s4 → … \d+ more … → s\d+ → /);
    expect(view.parts.header).toContain(`<dt>steps</dt><dd>${size} succeeded</dd>`);
    expect(view.parts.header).toContain(`<dt>executions</dt><dd>${size}</dd>`);
  });

  it('draws every step of a smaller run', async () => {
    const view = buildRunView(await chainRun(40), options);
    expect(view.data.steps).toHaveLength(40);
    expect(view.parts.header).not.toContain('This page shows');
  });
});
