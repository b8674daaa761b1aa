import { ErrorCodes, type JournalKey, type RunStore, readVerifiedJournal, StepwiseError } from '@stepwise/core';
import { renderReport } from './render-report.js';
import { buildReportModel } from './report-model.js';

/**
 * The self-contained HTML report of one run, read through the RunStore contract (any store).
 * Throws E505 when the store has no such run, E507 when its journal does not match its hash chain
 * (checked with `journalKey`, the key the run was journaled with; without it a keyed chain is not checked).
 */
export async function generateReport(
  store: RunStore,
  runId: string,
  options: { readonly journalKey?: JournalKey | undefined } = {},
): Promise<string> {
  const { events } = await readVerifiedJournal(store, runId, options);
  if (events.length === 0) {
    throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the store`, { location: runId });
  }
  return renderReport(buildReportModel(events), { generatedAt: new Date() });
}
