import { z } from 'zod';
import { type CustomErrorCode, ToolError } from '../errors.js';
import type { RunEvent } from '../journal/events.js';
import type { Plan, Step } from '../plan/plan-schema.js';
import { defineTool } from '../tools/define-tool.js';
import { ToolRegistry } from '../tools/tool-registry.js';

/** Counts calls per tool, so tests can prove a tool did (not) run again. */
export interface CallLog {
  readonly calls: {
    tool: string;
    args: unknown;
    stepId: string;
    attempt: number;
  }[];
  count(tool?: string): number;
}

export function createCallLog(): CallLog {
  const calls: CallLog['calls'] = [];
  return {
    calls,
    count: (tool) => (tool ? calls.filter((call) => call.tool === tool).length : calls.length),
  };
}

/**
 * Tools for tests: `echo` (read), `note` (write, not idempotent), `fail` (throws, retryable on
 * request), `sleep` (honours the signal), `hang` (ignores it). All record into `log`.
 */
export function createTestTools(log: CallLog = createCallLog()): {
  registry: ToolRegistry;
  log: CallLog;
} {
  const record = (tool: string, args: unknown, context: { stepId: string; attempt: number }) =>
    log.calls.push({
      tool,
      args,
      stepId: context.stepId,
      attempt: context.attempt,
    });
  const registry = new ToolRegistry([
    defineTool({
      name: 'echo',
      description: 'Returns its input as output.',
      input: z.object({ value: z.unknown().optional() }).passthrough(),
      effect: 'read',
      execute: (input, context) => {
        record('echo', input, context);
        return { value: input.value ?? null };
      },
    }),
    defineTool({
      name: 'note',
      description: 'Pretends to write a note (not idempotent).',
      input: z.object({ text: z.string() }),
      effect: 'write',
      execute: (input, context) => {
        record('note', input, context);
        return { written: input.text.length };
      },
    }),
    defineTool({
      name: 'fail',
      description: 'Always fails.',
      input: z.object({
        message: z.string().optional(),
        retryable: z.boolean().optional(),
        code: z.string().optional(),
      }),
      effect: 'read',
      execute: (input, context) => {
        record('fail', input, context);
        throw new ToolError({
          code: (input.code as CustomErrorCode | undefined) ?? 'E300',
          message: input.message ?? 'failed on purpose',
          retryable: input.retryable ?? false,
        });
      },
    }),
    defineTool({
      name: 'sleep',
      description: 'Waits, honouring the abort signal.',
      input: z.object({ ms: z.number().int().min(0) }),
      effect: 'read',
      execute: (input, context) => {
        record('sleep', input, context);
        return new Promise<{ slept: number }>((resolve, reject) => {
          const timer = setTimeout(() => resolve({ slept: input.ms }), input.ms);
          context.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(context.signal.reason);
          });
        });
      },
    }),
    defineTool({
      name: 'hang',
      description: 'Never finishes and ignores its signal.',
      input: z.object({}),
      effect: 'read',
      execute: (_input, context) => {
        record('hang', {}, context);
        return new Promise<never>(() => undefined);
      },
    }),
  ]);
  return { registry, log };
}

/** The events of one type, typed as that type. */
export const eventsOfType = <T extends RunEvent['type']>(events: readonly RunEvent[], type: T) =>
  events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type);

/**
 * Waits until `condition` holds, looking every 5 ms; throws naming `what` after `timeoutMs`. Past
 * the deadline it looks once more after the event loop's I/O phase: a process blocked beyond the
 * deadline runs its expired timer before it reads what arrived meanwhile (a child's output), and
 * that must not count as a timeout.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      await new Promise((resolve) => setImmediate(resolve));
      if (await condition()) return;
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A plan of `steps` with defaults filled in. */
export function makePlan(steps: Step[], extra: Partial<Plan> = {}): Plan {
  return {
    id: 'plan_test',
    version: 1,
    goal: 'test the engine',
    steps,
    ...extra,
  };
}

/** A chain of `n` echo steps, each depending on the previous one. */
export function chainPlan(n: number, tool = 'echo'): Plan {
  return makePlan(
    Array.from({ length: n }, (_, index) => ({
      id: `s${index}`,
      tool,
      args: { value: index },
      ...(index > 0 ? { dependsOn: [`s${index - 1}`] } : {}),
    })),
    { id: `chain_${n}` },
  );
}

/** Small deterministic PRNG (mulberry32) for reproducible random plans. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random DAG of `n` steps: each depends on up to `maxDependencies` earlier steps. */
export function randomDagPlan(
  n: number,
  options: { seed?: number; maxDependencies?: number; tool?: string } = {},
): Plan {
  const random = seededRandom(options.seed ?? 1);
  const maxDependencies = options.maxDependencies ?? 3;
  const steps: Step[] = [];
  for (let index = 0; index < n; index++) {
    const dependsOn = new Set<string>();
    const count = index === 0 ? 0 : Math.floor(random() * (maxDependencies + 1));
    for (let k = 0; k < count; k++) dependsOn.add(`s${Math.floor(random() * index)}`);
    steps.push({
      id: `s${index}`,
      tool: options.tool ?? 'echo',
      args: { value: index },
      ...(dependsOn.size > 0 ? { dependsOn: [...dependsOn] } : {}),
    });
  }
  return makePlan(steps, { id: `dag_${n}` });
}
