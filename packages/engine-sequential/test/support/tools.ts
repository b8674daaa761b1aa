import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  approvePlan,
  defineTool,
  ErrorCodes,
  type Plan,
  type PlanAuthorization,
  type Step,
  ToolError,
} from '@stepwise/core';
import { type CallLog, createTestTools, makePlan } from '@stepwise/core/testing';
import { z } from 'zod';

/**
 * Core's test tools (echo, note, fail, sleep, hang) plus seed-shaped ones: `file_read` (reads a
 * real file, E301 when missing), `splice_patch` (three required arguments), and the
 * `file_exists` precondition (E101) registered the way tools-node will register it.
 */
export function createSeedTools(workspace: string): ReturnType<typeof createTestTools> {
  const tools = createTestTools();
  const { registry, log } = tools;
  registry.register(
    defineTool({
      name: 'file_read',
      description: 'Returns the path it was given; fails with E301 when the file is missing.',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: (input, context) => {
        log.calls.push({ tool: 'file_read', args: input, stepId: context.stepId, attempt: context.attempt });
        if (input.path.includes('missing')) {
          throw new ToolError({ code: ErrorCodes.TOOL_NOT_FOUND, message: `${input.path}: no such file` });
        }
        context.addArtifact({ kind: 'stdout', content: `read ${input.path}` });
        return { path: input.path };
      },
    }),
  );
  registry.register(
    defineTool({
      name: 'splice_patch',
      description: 'Pretends to replace a symbol.',
      input: z.object({ file: z.string(), symbol: z.string(), with: z.string() }),
      effect: 'write',
      execute: (input, context) => {
        log.calls.push({ tool: 'splice_patch', args: input, stepId: context.stepId, attempt: context.attempt });
        return { changed: [input.file] };
      },
    }),
  );
  registry.preconditions.register('file_exists', {
    code: ErrorCodes.PRECONDITION_FILE,
    check: (precondition) =>
      existsSync(join(workspace, String(precondition.path)))
        ? true
        : { ok: false, message: `${precondition.path} is missing` },
  });
  return tools;
}

export const approve = (plan: Plan, by = 'tester'): PlanAuthorization => approvePlan(plan, { by });

/** `n` echo steps without dependencies. */
export function echoPlan(n: number, id = `echo_${n}`): Plan {
  return makePlan(
    Array.from({ length: n }, (_, index): Step => ({ id: `s${index + 1}`, tool: 'echo', args: { value: index + 1 } })),
    { id },
  );
}

export const stepIdsCalled = (log: CallLog): string[] => log.calls.map((call) => call.stepId);
