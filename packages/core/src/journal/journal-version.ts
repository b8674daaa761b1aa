import { ErrorCodes, StepwiseError } from '../errors.js';

/**
 * The journal format this release writes; it reads every format from 1 up to it. `run-start`
 * records it as `journalVersion`; a `run-start` without the field was written before formats were
 * numbered, in format 1. A change an older release would misread (a field the fold needs, an event
 * whose meaning changes) raises it, and the fold then refuses journals of a format it does not know
 * (E506) instead of guessing.
 *
 * 2: every event carries `chain`, its link in the run's hash chain (see `verifyJournal`). A release
 * that reads only format 1 would append unchained events to a chained journal, which then no longer
 * verifies: it refuses format 2 instead. Format 1 journals stay unchained when resumed.
 */
export const JOURNAL_VERSION = 2;

/** The format a `run-start` says its journal is in (1 when it says nothing). */
export function journalVersionOf(event: { readonly journalVersion?: unknown }): unknown {
  return event.journalVersion === undefined ? 1 : event.journalVersion;
}

/** Throws E506 unless `version` is a format this release reads (an integer from 1 to `JOURNAL_VERSION`). */
export function checkJournalVersion(runId: string, version: unknown, location: string): void {
  if (typeof version === 'number' && Number.isInteger(version) && version >= 1 && version <= JOURNAL_VERSION) return;
  const newer = typeof version === 'number' && Number.isInteger(version) && version > JOURNAL_VERSION;
  throw new StepwiseError(
    ErrorCodes.JOURNAL_VERSION_UNSUPPORTED,
    newer
      ? `run ${runId} was journaled in format version ${version}, newer than this release of @stepwise/core reads (up to ${JOURNAL_VERSION}): upgrade @stepwise/core`
      : `run ${runId} names journal format version ${JSON.stringify(version)}, which is not a version (1 to ${JOURNAL_VERSION})`,
    { location, details: { runId, journalVersion: version, supported: JOURNAL_VERSION } },
  );
}
