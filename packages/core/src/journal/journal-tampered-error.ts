import { ErrorCodes, StepwiseError } from '../errors.js';
import type { JournalBreak, JournalBroken } from './verify-journal.js';
import type { ProjectionBroken } from './verify-run.js';

const WHY: Readonly<Record<JournalBreak, string>> = {
  mismatch: "does not match the journal's hash chain",
  missing: "has no hash chain value, but the run's journal is chained",
  unexpected: "has a hash chain value, but the run's journal is unchained",
  sequence: 'is out of sequence: events before it are missing or out of order',
  'not-keyed':
    'is chained without a journal key, but a key is configured (written by a host without the key, or rewritten by someone without it)',
  algorithm: 'names a hash chain algorithm this release does not know',
};

function projectionMessage({ runId, view, difference }: ProjectionBroken): string {
  const what = view === 'summary' ? "the store's summary of the run" : `the store's record of ${view}`;
  return `run ${runId}: ${what} does not match its journal (${difference}) — the database was changed outside Stepwise`;
}

/**
 * E507 (`JOURNAL_TAMPERED`) for a run that does not verify (`verifyJournal`, `verifyRun`): "run
 * run_x: event 7 (step-end) does not match the journal's hash chain — the database was changed
 * outside Stepwise". `details`: `runId`, `seq`, `eventType`, `reason` (for a projection: `view`
 * and `difference` instead of the event).
 */
export function journalTamperedError(failure: JournalBroken | ProjectionBroken): StepwiseError {
  if (failure.reason === 'projection') {
    const { runId, reason, view, difference } = failure;
    return new StepwiseError(ErrorCodes.JOURNAL_TAMPERED, projectionMessage(failure), {
      location: runId,
      details: { runId, reason, view, difference },
    });
  }
  const { runId, seq, eventType, reason, keyed } = failure;
  // Under another key every event mismatches, the first one first.
  const hint = keyed && reason === 'mismatch' && seq === 1 ? ' (or the run was written with another journal key)' : '';
  return new StepwiseError(
    ErrorCodes.JOURNAL_TAMPERED,
    `run ${runId}: event ${seq} (${eventType}) ${WHY[reason]} — the database was changed outside Stepwise${hint}`,
    { location: `${runId}#${seq}`, details: { runId, seq, eventType, reason } },
  );
}
