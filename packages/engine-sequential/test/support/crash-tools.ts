import { appendFileSync } from 'node:fs';
import { defineTool, ToolRegistry } from '@stepwise/core';
import { z } from 'zod';

/**
 * Tools for the SIGKILL tests, shared by the child process and the test. Every call appends
 * `tool step attempt` to `sideFile` before doing anything, so invocations survive the kill.
 * With `stall`, the `stall_*` tools write `stalled <step>` and never return: the kill point.
 */
export function crashTools(sideFile: string, options: { readonly stall: boolean }): ToolRegistry {
  const record = (tool: string, context: { stepId: string; attempt: number }) =>
    appendFileSync(sideFile, `${tool} ${context.stepId} ${context.attempt}\n`);
  const stallOrReturn = (context: { stepId: string }) => {
    if (!options.stall) return { done: context.stepId };
    // The kill point comes a moment after the call started: an idempotent call's start is
    // committed just after it begins (one commit per quick step), and these tests crash a call
    // whose start is journaled. A crash before that commit leaves no trace and re-runs as attempt 1.
    setTimeout(() => appendFileSync(sideFile, `stalled ${context.stepId}\n`), 50);
    return new Promise<never>(() => undefined);
  };
  return new ToolRegistry([
    defineTool({
      name: 'write_note',
      description: 'A write that must not happen twice.',
      input: z.object({ text: z.string() }),
      effect: 'write',
      execute: (_input, context) => {
        record('write_note', context);
        return { done: context.stepId };
      },
    }),
    defineTool({
      name: 'stall_write',
      description: 'A non-idempotent write that is in flight when the process dies.',
      input: z.object({}),
      effect: 'write',
      execute: (_input, context) => {
        record('stall_write', context);
        return stallOrReturn(context);
      },
    }),
    defineTool({
      name: 'stall_read',
      description: 'An idempotent read that is in flight when the process dies.',
      input: z.object({}),
      effect: 'read',
      execute: (_input, context) => {
        record('stall_read', context);
        return stallOrReturn(context);
      },
    }),
  ]);
}
