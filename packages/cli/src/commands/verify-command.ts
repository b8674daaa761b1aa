import { type JournalKey, journalTamperedError, type RunStore, type RunVerification, verifyRun } from '@stepwise/core';
import { type OptionSpecs, STORE_OPTIONS, UsageError } from '../command-arguments.js';
import { ExitCodes } from '../exit-codes.js';
import { type CommandContext, openCommandStore, print, printError } from './command-context.js';
import type { CommandDefinition } from './command-definition.js';

const options = {
  ...STORE_OPTIONS,
  all: { type: 'boolean' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

/** One run's outcome, as `--json` prints it. */
interface Verdict {
  readonly runId: string;
  readonly ok: boolean;
  readonly events?: number;
  readonly integrity?: string;
  readonly code?: string;
  readonly message?: string;
  readonly details?: unknown;
}

function verdictOf(runId: string, result: RunVerification): Verdict {
  if (result.ok) return { runId, ok: true, events: result.events, integrity: result.integrity };
  const error = journalTamperedError(result);
  return { runId, ok: false, code: error.code, message: error.message, details: error.details };
}

/** `run_x: 42 events, chain intact (keyed)`, or the error. */
function lineOf(verdict: Verdict): string {
  if (!verdict.ok) return `${verdict.code} ${verdict.message}`;
  const { runId, events, integrity } = verdict;
  const counted = `${runId}: ${events} event${events === 1 ? '' : 's'}`;
  if (integrity === 'unchained') return `${counted}, unchained (journaled before hash chains: nothing to check)`;
  return `${counted}, chain intact (${integrity})`;
}

/** Every run the store lists, newest first, a page at a time. */
async function allRunIds(store: RunStore): Promise<string[]> {
  const ids: string[] = [];
  const page = 500;
  for (let offset = 0; ; offset += page) {
    const runs = await store.listRuns({ limit: page, offset });
    ids.push(...runs.map((run) => run.runId));
    if (runs.length < page) return ids;
  }
}

async function verifyAll(context: CommandContext, store: RunStore, journalKey: JournalKey, json: boolean) {
  const verdicts: Verdict[] = [];
  for (const runId of await allRunIds(store)) {
    const verdict = verdictOf(runId, await verifyRun(store, runId, { journalKey }));
    verdicts.push(verdict);
    if (json) continue;
    if (verdict.ok) print(context, lineOf(verdict));
    else printError(context, `${context.errorPalette.red('✗')} ${lineOf(verdict)}`);
  }
  const refused = verdicts.filter((verdict) => !verdict.ok).length;
  if (json) print(context, JSON.stringify(verdicts, null, 2));
  else {
    const unchained = verdicts.filter((verdict) => verdict.integrity === 'unchained').length;
    print(
      context,
      `${verdicts.length} run${verdicts.length === 1 ? '' : 's'}: ${verdicts.length - refused - unchained} intact, ${unchained} unchained, ${refused} changed outside Stepwise`,
    );
  }
  return refused === 0 ? ExitCodes.COMPLETED : ExitCodes.GENERAL_FAILURE;
}

export const verifyCommand: CommandDefinition = {
  name: 'verify',
  summary: "check that runs' journals were not changed outside Stepwise",
  positionals: { min: 0, max: 1, names: '[runId]' },
  options,
  help: `Usage: stepwise verify <runId> [--json] [--db F]
       stepwise verify --all [--json] [--db F]

Checks a run's journal against its hash chain (every event is linked to the one before it by
HMAC-SHA-256 with your journal key, ~/.config/stepwise/journal.key), then what the store says
of the run — the summary stepwise runs lists and the record of every execution — against the
journal. Prints "run_x: 42 events, chain intact (keyed)" and exits 0, or the first event or record
that does not match (E507) and exits 1. Runs journaled before hash chains existed are reported as
unchained: there is nothing to check.

Options:
      --all    every run the store lists; exits 1 when any was changed
      --json   the outcome as JSON (an array with --all)
      --db F   the SQLite journal (default: the configuration's)

Examples:
  stepwise verify run_0123abcd
  stepwise verify --all --json`,
  async run(context: CommandContext, { values, positionals }) {
    const runId = positionals[0];
    if ((runId === undefined) === (values.all !== true)) {
      throw new UsageError('stepwise verify: name a run, or pass --all (not both)');
    }
    const { store, journalKey } = await openCommandStore(context, values);
    try {
      const json = values.json === true;
      if (runId === undefined) return await verifyAll(context, store, journalKey, json);
      const result = await verifyRun(store, runId, { journalKey });
      if (json) {
        print(context, JSON.stringify(verdictOf(runId, result), null, 2));
        return result.ok ? ExitCodes.COMPLETED : ExitCodes.GENERAL_FAILURE;
      }
      // Refused as every command refuses a changed journal: the error on stderr, exit 1.
      if (!result.ok) throw journalTamperedError(result);
      print(context, lineOf(verdictOf(runId, result)));
      return ExitCodes.COMPLETED;
    } finally {
      await store.close();
    }
  },
};
