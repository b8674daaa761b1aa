// One host process for the crash benchmarks: runs or resumes a plan on the SQLite store with
// the engine named on the command line. Prints every event the store acknowledged (listeners
// hear an event only after its append returned) as one JSON line, and appends each tool call's
// start and end to a ledger file, so the parent can tell what ran and what was acknowledged.
import { appendFileSync } from 'node:fs';
import { approvePlan, defineTool, ToolRegistry } from '@stepwise/core';
import { agenticEngine } from '@stepwise/engine-agentic';
import { dagEngine } from '@stepwise/engine-dag';
import { sequentialEngine } from '@stepwise/engine-sequential';
import { createSqliteStore } from '@stepwise/store-sqlite';
import { z } from 'zod';

const [mode, engineName, databasePath, ledger, runIdArgument, stepsArgument] = process.argv.slice(2);
const stepCount = Number(stepsArgument ?? 12);

const tools = new ToolRegistry([
  defineTool({
    name: 'ledger_write',
    description: 'Appends to the ledger: a non-idempotent side effect.',
    input: z.object({ label: z.string(), ms: z.number() }),
    effect: 'write',
    idempotent: false,
    async execute(input, context) {
      appendFileSync(ledger, `start ${input.label} ${context.executionId}\n`);
      await new Promise((resolve) => setTimeout(resolve, input.ms));
      appendFileSync(ledger, `end ${input.label} ${context.executionId}\n`);
      return { label: input.label };
    },
  }),
]);

const plan = {
  id: 'storm',
  steps: Array.from({ length: stepCount }, (_, index) => ({
    id: `s${index}`,
    tool: 'ledger_write',
    args: { label: `s${index}`, ms: 5 + (index % 4) * 5 },
    ...(engineName === 'sequential' || index === 0 ? {} : { dependsOn: [`s${index - 1}`] }),
  })),
};

const store = createSqliteStore({ path: databasePath });
const common = { tools, store, leaseTtlMs: 400 };
const neverAsked = {
  name: 'unused',
  async generate() {
    throw new Error('every step names a tool: the model is never asked');
  },
};
const engine =
  engineName === 'sequential'
    ? sequentialEngine(common)
    : engineName === 'dag'
      ? dagEngine({ ...common, retry: { maxAttempts: 1 } })
      : agenticEngine({ ...common, model: neverAsked });

const onEvent = (event) =>
  process.stdout.write(`${JSON.stringify({ seq: event.seq, type: event.type, runId: event.runId })}\n`);
try {
  const handle =
    mode === 'run'
      ? engine.run(plan, {
          onEvent,
          ...(engineName === 'sequential' ? { authorization: approvePlan(plan, { by: 'bench' }) } : {}),
        })
      : engine.resume(runIdArgument, { onEvent });
  const result = await handle.result;
  process.stdout.write(`${JSON.stringify({ done: result.status })}\n`);
  await store.close();
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: error.code ?? String(error) })}\n`);
  await store.close().catch(() => undefined);
  process.exitCode = error.code === 'E501' ? 3 : 2;
}
