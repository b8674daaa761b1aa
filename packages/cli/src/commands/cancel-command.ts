import { ErrorCodes, type RunStore, StepwiseError } from '@stepwise/core';
import { type CancelOutcome, cancelRun } from '@stepwise/core/store';
import { type OptionSpecs, STORE_OPTIONS, UsageError } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { type CommandContext, describeError, openCommandStore, print, printError } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const cancelOptions = {
  ...STORE_OPTIONS,
  reason: { type: 'string' },
  by: { type: 'string' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** How long `--wait` waits for the run's process to end it, unless `--timeout` says otherwise. */
const DEFAULT_WAIT_SECONDS = 120;
const POLL_MS = 200;

function waitSeconds(value: unknown): number {
  if (value === undefined) return DEFAULT_WAIT_SECONDS;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`stepwise cancel: --timeout needs a number of seconds above 0 (got ${String(value)})`);
  }
  return seconds;
}

/** Polls the run until it is no longer `running`; its status, or `undefined` when the time ran out. */
async function waitForEnd(store: RunStore, runId: string, seconds: number): Promise<string | undefined> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const status = (await store.getRun(runId))?.status;
    if (status !== undefined && status !== 'running') return status;
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function describeOutcome(outcome: CancelOutcome): string {
  return outcome.outcome === 'cancelled'
    ? `run ${outcome.runId} cancelled (no process held it)`
    : `cancel of run ${outcome.runId} requested; the process running it cancels it at its next lease renewal`;
}

export const cancelCommand: CommandDefinition = {
  name: 'cancel',
  summary: 'cancel a running or waiting run, from any process that has its store',
  positionals: { min: 1, max: 1, names: '<runId>' },
  options: cancelOptions,
  help: `Usage: stepwise cancel <runId> [--reason TEXT] [--by WHO] [--wait [--timeout S]] [--json]
                       [--db F] [--config F]

Cancels a run from this terminal, whichever process runs it. A run another process holds (a
stepwise run in another terminal, a worker) gets a cancel request in the store: that process cancels
it at its next lease renewal (within a third of its lease time-to-live): its commands are killed,
its steps end cancelled and the journal names who asked (--by, default $USER). A run no process
holds (waiting for an answer, its process gone) is ended cancelled here. --wait waits until the run
has ended (at most --timeout seconds, default ${DEFAULT_WAIT_SECONDS}). stepwise resume continues a cancelled run.

Exit codes: 0 cancelled or requested; 2 no such run (E505) or the run has already ended (E508); 1 the
store failed, the run is held by a process of a store that cannot take requests (E501), or --wait
timed out.

Examples:
  stepwise cancel run_0123abcd --reason "wrong branch"
  stepwise cancel run_0123abcd --by alice --wait --json`,
  async run(context: CommandContext, { values, positionals }) {
    const runId = positionals[0] as string;
    const seconds = waitSeconds(values.timeout);
    const by = typeof values.by === 'string' ? values.by : (process.env.USER ?? 'stepwise cancel');
    const { store, journalKey } = await openCommandStore(context, values);
    try {
      let outcome: CancelOutcome;
      try {
        outcome = await cancelRun(store, runId, {
          by,
          ...(typeof values.reason === 'string' ? { reason: values.reason } : {}),
          journalKey,
        });
      } catch (error) {
        // Nothing left to cancel is a wrong request, not a failure (as an answer to a run that is not waiting).
        if (!StepwiseError.isInstance(error) || error.code !== ErrorCodes.RUN_ENDED) throw error;
        printError(context, `stepwise cancel: ${describeError(error)}`);
        return ExitCodes.INVALID_INPUT;
      }
      const status = values.wait ? await waitForEnd(store, runId, seconds) : undefined;
      if (values.json) {
        print(context, JSON.stringify({ runId, outcome: outcome.outcome, by, ...(values.wait ? { status } : {}) }));
      } else {
        print(context, describeOutcome(outcome));
        if (values.wait) print(context, status ? `run ${runId} ended ${status}` : `run ${runId} is still running`);
      }
      if (values.wait && status === undefined) {
        printError(context, `stepwise cancel: run ${runId} did not end within ${seconds} s`);
        return ExitCodes.GENERAL_FAILURE;
      }
      return ExitCodes.COMPLETED;
    } finally {
      await store.close();
    }
  },
};
