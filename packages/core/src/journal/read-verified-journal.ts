import type { RunEvent } from './events.js';
import { type RunStore, readAll } from './run-store.js';
import { checkJournal, type JournalIntact, type VerifyJournalOptions } from './verify-journal.js';

export interface VerifiedJournal {
  /** The run's events in seq order (those after `after`); none when the store has no such run. */
  readonly events: RunEvent[];
  readonly verification: JournalIntact;
}

/**
 * Reads a run's whole journal and checks it against its hash chain before anyone folds it: what
 * resume, `respond`, `show`, the report and the dashboard load. Throws E507 (`JOURNAL_TAMPERED`,
 * naming the run and the first event that does not verify) when the store was changed behind
 * Stepwise's back; a journal written before chains existed loads as `unchained`. With `after` (the
 * verification of an earlier read), reads and checks only the events after it: a run followed live.
 */
export async function readVerifiedJournal(
  store: RunStore,
  runId: string,
  options: VerifyJournalOptions = {},
): Promise<VerifiedJournal> {
  const events = await readAll(store, runId, options.after?.lastSeq ?? 0);
  return { events, verification: checkJournal(runId, events, options) };
}
