import {
  ErrorCodes,
  type RunFilter,
  type RunState,
  type RunStore,
  type RunSummary,
  readAll,
  StepwiseError,
} from '@stepwise/core';
import { foldRun } from '@stepwise/core/store';
import { describeWaitingOn } from './waiting-on.js';

export const RUN_STATES: readonly RunState[] = ['running', 'waiting', 'completed', 'failed', 'partial', 'cancelled'];

/** What the runs list shows: which statuses, which words, which page (from 0). */
export interface RunsQuery {
  readonly status: readonly RunState[];
  readonly search: string;
  readonly page: number;
}

/** One row of the runs list. */
export interface RunRow {
  readonly runId: string;
  readonly planId: string;
  readonly goal: string | undefined;
  readonly engine: string;
  readonly status: RunState;
  readonly parentRunId: string | undefined;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt: string | undefined;
  /** Until it finished, or until its last event while it is not running; until now while it runs. */
  readonly durationMs: number;
  readonly stepCount: number;
  readonly stepCounts: Readonly<Record<string, number>>;
  /** What a waiting run waits on (approvals, questions, a plan approval); empty otherwise. */
  readonly waitingOn: readonly string[];
}

export interface RunsPage {
  readonly query: RunsQuery;
  readonly pageSize: number;
  readonly runs: readonly RunRow[];
  readonly hasMore: boolean;
  /** With a search: how many of the newest runs were looked at, and whether the search stopped at its limit. */
  readonly searched?: { readonly runs: number; readonly limitReached: boolean };
}

/** `?status=failed,partial&q=deploy&page=2` → a query; unknown statuses and bad pages are E004. */
export function parseRunsQuery(params: URLSearchParams): RunsQuery {
  const status = (params.get('status') ?? '')
    .split(',')
    .map((value) => value.trim())
    .filter(Boolean);
  for (const value of status) {
    if (!(RUN_STATES as readonly string[]).includes(value)) {
      throw new StepwiseError(
        ErrorCodes.INPUT_INVALID,
        `unknown run status "${value}" (one of ${RUN_STATES.join(', ')})`,
        { location: 'status' },
      );
    }
  }
  const pageText = params.get('page') ?? '0';
  const page = Number(pageText);
  if (!/^\d{1,6}$/.test(pageText) || !Number.isSafeInteger(page)) {
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `page must be a whole number from 0 (got "${pageText}")`, {
      location: 'page',
    });
  }
  return { status: status as RunState[], search: (params.get('q') ?? '').trim().slice(0, 200), page };
}

function durationOf(run: RunSummary, now: number): number {
  const start = Date.parse(run.createdAt);
  const end = run.finishedAt ? Date.parse(run.finishedAt) : run.status === 'running' ? now : Date.parse(run.updatedAt);
  return Math.max(0, end - start);
}

async function rowOf(store: RunStore, run: RunSummary, now: number): Promise<RunRow> {
  let waitingOn: string[] = [];
  if (run.status === 'waiting') {
    const events = await readAll(store, run.runId);
    waitingOn = describeWaitingOn(events, foldRun(events, run.runId));
  }
  const { runId, planId, goal, engine, status, parentRunId, createdAt, updatedAt, finishedAt } = run;
  return {
    ...{ runId, planId, goal, engine, status, parentRunId, createdAt, updatedAt, finishedAt },
    durationMs: durationOf(run, now),
    stepCount: run.stepCount,
    stepCounts: run.stepCounts,
    waitingOn,
  };
}

function matches(run: RunSummary, words: readonly string[]): boolean {
  const text = `${run.goal ?? ''}\n${run.planId}\n${run.runId}`.toLowerCase();
  return words.every((word) => text.includes(word));
}

/** How many runs one read of a search asks the store for. */
const SEARCH_CHUNK = 500;

/**
 * The runs of a search, newest first: the store has no text search yet, so the newest runs are
 * read in chunks (with the status filter applied by the store) and matched here, up to `limit`.
 */
async function searchRuns(store: RunStore, filter: RunFilter, words: readonly string[], want: number, limit: number) {
  const found: RunSummary[] = [];
  let offset = 0;
  while (found.length < want && offset < limit) {
    const asked = Math.min(SEARCH_CHUNK, limit - offset);
    const chunk = await store.listRuns({ ...filter, limit: asked, offset });
    found.push(...chunk.filter((run) => matches(run, words)));
    offset += chunk.length;
    if (chunk.length < asked) return { found, scanned: offset, limitReached: false };
  }
  return { found, scanned: offset, limitReached: found.length < want && offset >= limit };
}

/** One page of the runs list, through the store's `listRuns` paging (newest first). */
export async function listRunsPage(
  store: RunStore,
  query: RunsQuery,
  options: { readonly pageSize: number; readonly searchLimit: number },
): Promise<RunsPage> {
  const { pageSize } = options;
  const filter: RunFilter = query.status.length > 0 ? { status: query.status } : {};
  const now = Date.now();
  if (query.search === '') {
    // One more than a page tells whether there is a next one.
    const runs = await store.listRuns({ ...filter, limit: pageSize + 1, offset: query.page * pageSize });
    const shown = runs.slice(0, pageSize);
    return {
      query,
      pageSize,
      runs: await Promise.all(shown.map((run) => rowOf(store, run, now))),
      hasMore: runs.length > pageSize,
    };
  }
  const words = query.search.toLowerCase().split(/\s+/).filter(Boolean);
  const want = (query.page + 1) * pageSize + 1;
  const { found, scanned, limitReached } = await searchRuns(store, filter, words, want, options.searchLimit);
  const shown = found.slice(query.page * pageSize, (query.page + 1) * pageSize);
  return {
    query,
    pageSize,
    runs: await Promise.all(shown.map((run) => rowOf(store, run, now))),
    hasMore: found.length > (query.page + 1) * pageSize,
    searched: { runs: scanned, limitReached },
  };
}
