import type { RunState } from '@stepwise/core';
import { choice, type OptionSpecs, positiveInteger, STORE_OPTIONS } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { alignColumns } from '../terminal.js';
import { type CommandContext, openCommandStore, print } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  status: { type: 'string', short: 's' },
  limit: { type: 'string', short: 'n' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

const STATES: readonly RunState[] = ['running', 'completed', 'failed', 'partial', 'cancelled', 'waiting'];

export function statusColour(context: CommandContext, status: string): string {
  const { palette } = context;
  if (status === 'completed' || status === 'succeeded') return palette.green(status);
  if (status === 'failed') return palette.red(status);
  if (status === 'partial' || status === 'denied' || status === 'running') return palette.yellow(status);
  if (status === 'waiting') return palette.cyan(status);
  return palette.gray(status);
}

export const runsCommand: CommandDefinition = {
  name: 'runs',
  summary: 'list runs in the journal, newest first',
  positionals: { min: 0, max: 0, names: '' },
  options,
  help: `Usage: stepwise runs [--status S] [--limit N] [--json] [--db F]

Lists the runs journaled in the database (default .stepwise/stepwise.db in the workspace).

Options:
  -s, --status S   only runs in this state: ${STATES.join(', ')}
  -n, --limit N    at most N runs (default 20)
      --json       one JSON array of run summaries
      --db F       the SQLite journal (default: the configuration's)

Examples:
  stepwise runs
  stepwise runs --status failed --limit 5`,
  async run(context: CommandContext, { values }) {
    const status = choice<RunState>('runs', 'status', values.status, STATES);
    const limit = positiveInteger('runs', 'limit', values.limit) ?? 20;
    const { store } = await openCommandStore(context, values);
    try {
      const runs = await store.listRuns({ ...(status ? { status } : {}), limit });
      if (values.json) {
        print(context, JSON.stringify(runs, null, 2));
        return ExitCodes.COMPLETED;
      }
      if (runs.length === 0) {
        print(context, context.palette.gray('no runs yet'));
        return ExitCodes.COMPLETED;
      }
      const { palette } = context;
      const header = ['run', 'status', 'engine', 'steps', 'started', 'plan'].map((title) => palette.gray(title));
      const rows = runs.map((run) => [
        run.runId,
        statusColour(context, run.status),
        run.engine,
        `${run.stepCounts.succeeded ?? 0}/${run.stepCount} ok`,
        run.createdAt,
        `${run.planId}${run.goal ? palette.gray(` — ${run.goal}`) : ''}`,
      ]);
      for (const line of alignColumns([header, ...rows])) print(context, line);
      return ExitCodes.COMPLETED;
    } finally {
      await store.close();
    }
  },
};
