import { type PlanAuthorization, readAll } from '@stepwise/core';
import { resultFromFold, sleep } from '@stepwise/core/engine';
import { foldRun } from '@stepwise/core/store';
import type { PostgresStore } from '@stepwise/store-postgres';
import { type OptionSpecs, UsageError } from '../command-arguments.js';
import { createRunner, loadPostgresStore } from '../create-runner.js';
import { ExitCodes, exitCodeForResult } from '../exit-codes.js';
import { formatPlanProblems } from '../format-plan-problems.js';
import { readJsonFile } from '../read-plan-file.js';
import { runnerOptionsFromConfig } from '../runner-options-from-config.js';
import { type CommandContext, commandJournalKey, loadCommandConfig, print, printError } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';
import { requirePostgresStore } from './worker-command.js';

const options = {
  config: { type: 'string', short: 'c' },
  workspace: { type: 'string', short: 'w' },
  queue: { type: 'string', short: 'q' },
  'run-id': { type: 'string' },
  priority: { type: 'string' },
  authorization: { type: 'string', short: 'a' },
  wait: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** `--priority N`: any integer. */
function priorityOf(value: string | boolean | undefined): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value === 'string' && value.trim() !== '' && Number.isSafeInteger(number)) return number;
  throw new UsageError(`stepwise enqueue: --priority must be an integer (got "${String(value)}")`);
}

/** How often `--wait` looks at the queue. */
const WAIT_POLL_MS = 200;

/**
 * Waits until a worker recorded the run's end in the queue, then gives the exit code of its
 * journaled result (as `stepwise run` would), or 1 when the run ended without one (its plan refused
 * by the worker, or given up after too many claims).
 */
async function waitForEnd(context: CommandContext, store: PostgresStore, runId: string): Promise<number> {
  for (;;) {
    const row = await store.db
      .selectFrom('work_queue')
      .select(['state', 'result_status', 'last_error'])
      .where('run_id', '=', runId)
      .executeTakeFirst();
    if (row?.state === 'done') {
      const run = foldRun(await readAll(store, runId));
      const result = resultFromFold(run);
      print(context, JSON.stringify({ runId, status: result?.status ?? row.result_status }));
      if (result) return exitCodeForResult(result);
      if (row.last_error) printError(context, `${runId}: ${row.last_error}`);
      return ExitCodes.GENERAL_FAILURE;
    }
    await sleep(WAIT_POLL_MS);
  }
}

export const enqueueCommand: CommandDefinition = {
  name: 'enqueue',
  summary: 'put a plan on the Postgres queue for the workers; --wait for its end',
  positionals: { min: 1, max: 1, names: '<plan.json>' },
  options,
  help: `Usage: stepwise enqueue <plan.json> [--queue Q] [--run-id ID] [--priority N] [--authorization F] [--wait]

Validates the plan with the configured engine and tools, then puts it on the queue of the Postgres
store (configuration: "store": { "kind": "postgres", "url": "…" }), where a worker (stepwise worker)
on any machine claims and runs it. Prints {"runId", "queue", "created"}. Enqueuing a run id again
enqueues nothing ("created": false).

Options:
  -q, --queue Q           the queue (default "default")
      --run-id ID         the run's id (default a new run_<uuid>)
      --priority N        higher runs are claimed first (default 0)
  -a, --authorization F   the file written by stepwise approve (the sequential engine needs one)
      --wait              wait for the run's end; print {"runId", "status"} and exit as stepwise run would
  -c, --config F          the configuration file
  -w, --workspace W       the workspace the tools work in

Exit codes: 0 enqueued (with --wait: completed), 2 invalid plan or configuration; with --wait, those
of stepwise run (30 step failed, …) and 1 when the run ended without a result.

Examples:
  stepwise enqueue plan.json
  stepwise enqueue plan.json --queue builds --wait`,
  async run(context, { values, positionals }) {
    const file = positionals[0] as string;
    const priority = priorityOf(values.priority);
    const planFile = await readJsonFile(file, 'plan', context.io.cwd);
    const authorization =
      typeof values.authorization === 'string'
        ? ((await readJsonFile(values.authorization, 'authorization', context.io.cwd)).value as PlanAuthorization)
        : undefined;
    const loaded = await loadCommandConfig(context, values.config as string | undefined);
    const runnerOptions = runnerOptionsFromConfig(loaded, {
      cwd: context.io.cwd,
      ...(typeof values.workspace === 'string' ? { workspace: values.workspace } : {}),
    });
    requirePostgresStore('enqueue', runnerOptions.store);
    const runner = await createRunner({ ...runnerOptions, journalKey: await commandJournalKey(context) });
    try {
      const validation = runner.validate(planFile.value);
      if (!validation.ok) {
        for (const line of formatPlanProblems(planFile, validation.problems)) printError(context, line);
        printError(context, `${file}: not enqueued, the plan has ${validation.problems.length} problem(s)`);
        return ExitCodes.INVALID_INPUT;
      }
      const { enqueue } = await loadPostgresStore();
      const store = runner.store as PostgresStore;
      const enqueued = await enqueue(validation.plan, {
        store,
        ...(typeof values.queue === 'string' ? { queue: values.queue } : {}),
        ...(typeof values['run-id'] === 'string' ? { runId: values['run-id'] } : {}),
        ...(priority === undefined ? {} : { priority }),
        ...(authorization ? { authorization } : {}),
      });
      print(context, JSON.stringify(enqueued));
      if (values.wait !== true) return ExitCodes.COMPLETED;
      return await waitForEnd(context, store, enqueued.runId);
    } finally {
      await runner.close().catch(() => undefined);
    }
  },
};
