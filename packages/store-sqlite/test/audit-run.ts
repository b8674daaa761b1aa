import { approvePlan, defineTool, type Plan, type StepResult, ToolError, ToolRegistry } from '@stepwise/core';
import { finishRun, invokeStep, startRun } from '@stepwise/core/engine';
import { makePlan } from '@stepwise/core/testing';
import { createSqliteStore } from '../src/index.js';

/** A real run through core's kernel: a command that fails, one whose arguments go to `blobs`, a note. */
const tools = new ToolRegistry([
  defineTool({
    name: 'run_command',
    description: 'Pretends to run argv; `npm test` fails with exit code 1.',
    input: {
      type: 'object',
      properties: { command: { type: 'array', items: { type: 'string' } } },
      required: ['command'],
    },
    effect: 'exec',
    execute: (input) => {
      const { command } = input as { command: string[] };
      if (command.join(' ') === 'npm test') {
        throw new ToolError({ code: 'E304', message: 'npm test exited with code 1', details: { exitCode: 1 } });
      }
      return { exitCode: 0, stdout: `ran ${command.length} words` };
    },
  }),
  defineTool({
    name: 'note',
    description: 'Writes a note.',
    input: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    effect: 'write',
    execute: (input) => ({ written: (input as { text: string }).text.length }),
  }),
]);

// Long enough that its arguments are stored in `blobs` (threshold below): the queries must see them anyway.
export const longCommand = ['node', ...Array.from({ length: 60 }, (_, index) => `--flag-number-${index}`)];

const plan: Plan = makePlan(
  [
    { id: 'build', tool: 'run_command', args: { command: ['npm', 'run', 'build'] }, description: 'compile' },
    { id: 'test', tool: 'run_command', args: { command: ['npm', 'test'] }, description: 'run the tests' },
    { id: 'long', tool: 'run_command', args: { command: longCommand } },
    { id: 'report', tool: 'note', args: { text: 'done' } },
  ],
  { id: 'plan_audit', goal: 'ship the release' },
);

export async function executeRun(path: string, runId: string): Promise<void> {
  const store = createSqliteStore({ path, artifactThresholdBytes: 256 });
  const journal = await startRun({
    store,
    runId,
    plan,
    engine: 'test',
    authorization: approvePlan(plan, { by: 'alice' }),
  });
  const context = {
    runId,
    journal,
    registry: tools,
    approvals: { policy: { effects: { exec: 'auto' as const, write: 'auto' as const } } },
  };
  const results: StepResult[] = [];
  for (const step of plan.steps) results.push(await invokeStep(step, { attempt: 1, references: 'literal' }, context));
  await finishRun(journal, { plan, engine: 'test', status: 'failed', steps: results, durationMs: 5 });
  await store.close();
}
