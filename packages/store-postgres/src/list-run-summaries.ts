import type { RunFilter, RunSummary } from '@stepwise/core';
import { searchWords } from '@stepwise/core/store';
import { type Kysely, sql } from 'kysely';
import type { PostgresStoreDatabase } from './database-schema.js';

/** `listRuns`: the summaries of the runs with a journal that match `filter`, newest first. */
export async function listRunSummaries(db: Kysely<PostgresStoreDatabase>, filter: RunFilter): Promise<RunSummary[]> {
  const statuses = filter.status === undefined ? undefined : [filter.status].flat();
  if (statuses?.length === 0) return [];
  let query = db.selectFrom('runs').select('summary').where('last_seq', '>', 0);
  if (statuses) query = query.where('status', 'in', statuses);
  if (filter.planId) query = query.where('plan_id', '=', filter.planId);
  if (filter.since) query = query.where('created_at', '>=', filter.since);
  if (filter.until) query = query.where('created_at', '<', filter.until);
  // strpos, not LIKE: a word with % or _ means itself.
  for (const word of searchWords(filter.search)) {
    query = query.where(
      sql<number>`strpos(lower(coalesce(goal, '') || chr(10) || plan_id || chr(10) || id), ${word})`,
      '>',
      0,
    );
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('position')
    .limit(filter.limit ?? 100)
    .offset(filter.offset ?? 0)
    .execute();
  return rows.map((row) => row.summary as RunSummary);
}
