import { ErrorCodes, StepwiseError } from '../errors.js';
import type { RunEvent } from './events.js';
import { firstDifference } from './first-difference.js';
import { executionRecord, foldRun, summarizeRun } from './fold-run.js';
import type { JournalKey } from './journal-chain.js';
import { type RunStore, readAll } from './run-store.js';
import { type JournalBroken, type JournalIntact, verifyJournal } from './verify-journal.js';

/** A store's answer about a run that differs from the fold of its journal. */
export interface ProjectionBroken {
  readonly ok: false;
  readonly runId: string;
  readonly reason: 'projection';
  /** What the store answered: `getRun` (the summary `runs` lists) or `getExecution` of one execution. */
  readonly view: 'summary' | `execution ${string}`;
  /** Where it first differs, e.g. `/status: got "completed", the fold says "failed"`. */
  readonly difference: string;
}

export type RunVerification = JournalIntact | JournalBroken | ProjectionBroken;

/** Where the store's summary or an audit bundle first differs from the fold of `events`. */
async function projectionDifference(
  store: RunStore,
  runId: string,
  events: readonly RunEvent[],
): Promise<Omit<ProjectionBroken, 'ok' | 'runId' | 'reason'> | undefined> {
  const run = foldRun(events, runId);
  const summary = firstDifference(await store.getRun(runId), summarizeRun(run));
  if (summary) return { view: 'summary', difference: summary };
  for (const executionId of run.executions.keys()) {
    const difference = firstDifference(await store.getExecution(executionId), executionRecord(run, executionId));
    if (difference) return { view: `execution ${executionId}`, difference };
  }
  return undefined;
}

/** Reads a run that may still be written to this often before a difference counts. */
const READS = 3;

/**
 * Checks everything a store says about a run: its journal against the hash chain
 * (`verifyJournal`), then the store's projections — the summary (`getRun`, what `listRuns` shows)
 * and the audit bundle of every execution (`getExecution`) — against core's fold of that journal,
 * so a row changed behind the store's back is caught too. A run another process is writing is
 * read again when it grew meanwhile. E505 when the store has no such run.
 */
export async function verifyRun(
  store: RunStore,
  runId: string,
  options: { readonly journalKey?: JournalKey | undefined } = {},
): Promise<RunVerification> {
  const events: RunEvent[] = [];
  let verified: JournalIntact | undefined;
  for (let read = 1; ; read++) {
    const more = await readAll(store, runId, verified?.lastSeq ?? 0);
    if (events.length === 0 && more.length === 0) {
      throw new StepwiseError(ErrorCodes.RUN_NOT_FOUND, `run ${runId} is not in the store`, { location: runId });
    }
    const journal = verifyJournal(runId, more, { ...options, ...(verified ? { after: verified } : {}) });
    if (!journal.ok) return journal;
    events.push(...more);
    verified = journal;
    const difference = await projectionDifference(store, runId, events);
    if (!difference) return journal;
    const grown = ((await store.getRun(runId))?.lastSeq ?? 0) > journal.lastSeq;
    if (!grown || read === READS) return { ok: false, runId, reason: 'projection', ...difference };
  }
}
