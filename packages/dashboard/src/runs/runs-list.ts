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

/** One page of the runs list, through the store's `listRuns` paging (newest first). */
export async function listRunsPage(
  store: RunStore,
  query: RunsQuery,
  options: { readonly pageSize: number },
): Promise<RunsPage> {
  const { pageSize } = options;
  const filter: RunFilter = {
    ...(query.status.length > 0 ? { status: query.status } : {}),
    ...(query.search === '' ? {} : { search: query.search }),
  };
  const now = Date.now();
  // The store filters and searches; one more than a page tells whether there is a next one.
  const runs = await store.listRuns({ ...filter, limit: pageSize + 1, offset: query.page * pageSize });
  const shown = runs.slice(0, pageSize);
  return {
    query,
    pageSize,
    runs: await Promise.all(shown.map((run) => rowOf(store, run, now))),
    hasMore: runs.length > pageSize,
  };
}
