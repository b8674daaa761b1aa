import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defineTool, MemoryStore, type Plan, type RunEvent, type Step, type ToolRegistry } from '@stepwise/core';
import { createTestTools } from '@stepwise/core/testing';
import { nodeTools } from '@stepwise/tools-node';
import { z } from 'zod';
import { type AgenticEngineOptions, agenticEngine, heuristicEstimator } from '../src/index.js';

/** A workspace in the system temp dir, removed by `cleanup`. */
export async function tempWorkspace(prefix = 'agentic-'): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Core's test tools (echo, note, fail, sleep, hang) plus `big` (a large read result). */
export function testTools(): ReturnType<typeof createTestTools> & { registry: ToolRegistry } {
  const tools = createTestTools();
  tools.registry.register(
    defineTool({
      name: 'big',
      description: 'Returns a large text.',
      input: z.object({ lines: z.number().int().min(1) }),
      effect: 'read',
      execute(input, context) {
        tools.log.calls.push({ tool: 'big', args: input, stepId: context.stepId, attempt: context.attempt });
        return Array.from({ length: input.lines }, (_, index) => `line ${index}: lorem ipsum dolor sit amet`).join(
          '\n',
        );
      },
    }),
  );
  return tools;
}

/** Core's test tools plus the real file and command tools of @stepwise/tools-node, confined to `workspace`. */
export async function nodeToolRegistry(workspace: string, allow: readonly string[] = ['node']) {
  const tools = testTools();
  await tools.registry.use(nodeTools({ workspace, commands: { allow } }));
  return tools;
}

export function goalPlan(steps: Step[], extra: Partial<Plan> = {}): Plan {
  return { id: 'plan_agentic', version: 1, goal: 'exercise the agentic engine', steps, ...extra };
}

/** An engine over a MemoryStore with the heuristic estimator (fast, deterministic) unless overridden. */
export function testEngine(options: Partial<AgenticEngineOptions> & Pick<AgenticEngineOptions, 'model' | 'tools'>) {
  const store = (options.store as MemoryStore | undefined) ?? new MemoryStore();
  const events: RunEvent[] = [];
  const engine = agenticEngine({
    tokenEstimator: heuristicEstimator,
    random: () => 0.5,
    ...options,
    store,
    onEvent: (event) => events.push(event),
  });
  return { engine, store, events };
}

export function ofType<T extends RunEvent['type']>(
  events: readonly RunEvent[],
  type: T,
): Extract<RunEvent, { type: T }>[] {
  return events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type);
}
