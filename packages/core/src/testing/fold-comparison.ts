import type { RunEvent } from '../journal/events.js';
import { firstDifference } from '../journal/first-difference.js';
import { executionRecord, type FoldedRun, foldRun, summarizeRun } from '../journal/fold-run.js';
import { type RunStore, readAll } from '../journal/run-store.js';
import type { GeneratedJournal } from './random-journal.js';
import type { Draw } from './random-values.js';

export { firstDifference };

/** What appending told: the runs in the order they were first written, and who owns each execution id. */
export interface AppendedJournals {
  readonly order: readonly string[];
  /** The run whose `tool-call` of the execution was appended last: whose audit bundle `getExecution` returns. */
  readonly owners: ReadonlyMap<string, string>;
}

/** Appends every journal's batches, the runs interleaved in an order `draw` picks. */
export async function appendJournals(
  store: RunStore,
  journals: readonly GeneratedJournal[],
  draw: Draw,
): Promise<AppendedJournals> {
  const owners = new Map<string, string>();
  const order: string[] = [];
  const next = journals.map(() => ({ batch: 0, event: 0 }));
  for (;;) {
    const open = journals
      .map((_, index) => index)
      .filter((index) => next[index]?.batch !== journals[index]?.batches.length);
    if (open.length === 0) return { order, owners };
    const index = open[draw(0, open.length - 1)] as number;
    const journal = journals[index] as GeneratedJournal;
    const position = next[index] as { batch: number; event: number };
    const size = journal.batches[position.batch] as number;
    const batch = journal.events.slice(position.event, position.event + size);
    await store.append(journal.runId, batch);
    if (position.batch === 0) order.push(journal.runId);
    for (const event of batch) if (event.type === 'tool-call') owners.set(event.executionId, journal.runId);
    position.batch += 1;
    position.event += size;
  }
}

/** A store's own views of a run (steps, approvals, model calls…) compared with the fold: the differences. */
export type StoreViewCheck = (
  journal: GeneratedJournal,
  fold: FoldedRun,
  appended: AppendedJournals,
) => Promise<readonly string[]>;

async function checkRun(
  store: RunStore,
  journal: GeneratedJournal,
  fold: FoldedRun,
  appended: AppendedJournals,
  views?: StoreViewCheck,
) {
  const problems: string[] = [];
  const where = `run ${journal.runId}`;
  const read = firstDifference(await readAll(store, journal.runId), journal.events as RunEvent[]);
  if (read) problems.push(`${where} read ${read}`);
  const summary = firstDifference(await store.getRun(journal.runId), summarizeRun(fold));
  if (summary) problems.push(`${where} getRun ${summary}`);
  if (views) problems.push(...(await views(journal, fold, appended)).map((problem) => `${where} ${problem}`));
  return problems;
}

/** `listRuns` of the case's plan id: every run, newest first (ties in the order runs were first written); then by status. */
async function checkList(store: RunStore, planId: string, folds: readonly FoldedRun[], appendOrder: readonly string[]) {
  const problems: string[] = [];
  const byOrder = [...folds].sort((a, b) => appendOrder.indexOf(a.runId) - appendOrder.indexOf(b.runId));
  const expected = byOrder
    .map(summarizeRun)
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  const listed = firstDifference(await store.listRuns({ planId, limit: 1000 }), expected);
  if (listed) problems.push(`listRuns ${listed}`);
  const status = expected[0]?.status;
  if (status) {
    const filtered = firstDifference(
      await store.listRuns({ planId, status, limit: 1000 }),
      expected.filter((summary) => summary.status === status),
    );
    if (filtered) problems.push(`listRuns({ status: ${status} }) ${filtered}`);
  }
  return problems;
}

export interface FoldComparisonOptions {
  /** The plan id every run of the case has (`randomJournals`' `planId`): `listRuns({ planId })` lists the case. */
  readonly planId?: string;
  /** The store's own views of a run, compared with the fold. */
  readonly views?: StoreViewCheck;
}

/**
 * Appends `journals` to `store`, then compares everything the store answers with core's fold of the
 * same journals: `read`, `getRun`, `listRuns`, `getExecution` of every execution, and `views`.
 * Returns the differences (none when the store agrees). The property the stores' tests check.
 */
export async function checkStoreAgainstFold(
  store: RunStore,
  journals: readonly GeneratedJournal[],
  draw: Draw,
  options: FoldComparisonOptions = {},
): Promise<string[]> {
  const appended = await appendJournals(store, journals, draw);
  const { order, owners } = appended;
  const folds = new Map(journals.map((journal) => [journal.runId, foldRun(journal.events, journal.runId)]));
  const problems: string[] = [];
  for (const journal of journals) {
    problems.push(...(await checkRun(store, journal, folds.get(journal.runId) as FoldedRun, appended, options.views)));
  }
  problems.push(...(await checkList(store, options.planId ?? 'plan', [...folds.values()], order)));
  const executionIds = new Set(journals.flatMap((journal) => [...(folds.get(journal.runId)?.executions.keys() ?? [])]));
  executionIds.add('ex_never_called');
  for (const executionId of executionIds) {
    const owner = owners.get(executionId);
    const expected = owner === undefined ? undefined : executionRecord(folds.get(owner) as FoldedRun, executionId);
    const found = firstDifference(await store.getExecution(executionId), expected);
    if (found) problems.push(`getExecution(${executionId}) ${found}`);
  }
  return problems;
}
