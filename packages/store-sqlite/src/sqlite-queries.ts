import type { RunFilter } from '@stepwise/core';
import { searchWords } from '@stepwise/core/store';
import { type Kysely, sql } from 'kysely';
import type { StoreDatabase } from './database-schema.js';
import { type StepRow, SUMMARY_COLUMNS } from './journal-reader.js';

// The store's reads that filter and page (kysely builds them); the journal and the projections of
// one run are read with JournalReader's prepared statements.

/** The `runs_view` rows of the runs `filter` (with its statuses, when given) selects, newest first. */
export function selectRuns(db: Kysely<StoreDatabase>, filter: RunFilter, statuses: readonly string[] | undefined) {
  let query = db.selectFrom('runs_view').select(SUMMARY_COLUMNS).where('last_seq', '>', 0);
  if (statuses) query = query.where('status', 'in', statuses);
  if (filter.planId) query = query.where('plan_id', '=', filter.planId);
  if (filter.since) query = query.where('created_at', '>=', filter.since);
  if (filter.until) query = query.where('created_at', '<', filter.until);
  // instr, not LIKE: a word with % or _ means itself. lower() folds ASCII letters only (SQLite's rule).
  for (const word of searchWords(filter.search)) {
    query = query.where(
      sql<number>`instr(lower(coalesce(goal, '') || char(10) || plan_id || char(10) || id), ${word})`,
      '>',
      0,
    );
  }
  return (
    query
      .orderBy('created_at', 'desc')
      // Ties (same created_at) keep the order runs were first written, as MemoryStore's stable sort does.
      .orderBy('key')
      .limit(filter.limit ?? 100)
      .offset(filter.offset ?? 0)
      .execute()
  );
}

const STEP_COLUMNS = [
  'step_id',
  'status',
  'attempt',
  'tool',
  'description',
  'execution_id',
  'started_at',
  'ended_at',
  'duration_ms',
  'tool_called',
  'idempotent',
  'output',
  'output_sha256',
  'output_from_execution',
  'error',
  'usage',
] as const;

/** The run's `steps` rows in the order the fold met them (plan order first). */
export function selectSteps(db: Kysely<StoreDatabase>, runId: string): Promise<StepRow[]> {
  return db
    .selectFrom('steps')
    .select(STEP_COLUMNS)
    .where('run_key', '=', (query) => query.selectFrom('runs').select('key').where('id', '=', runId))
    .orderBy('first_seq')
    .orderBy('plan_index')
    .execute();
}

/** The ids of the run's executions (of one step when `stepId` is given), oldest call first. */
export async function selectExecutionIds(
  db: Kysely<StoreDatabase>,
  runId: string,
  stepId: string | undefined,
): Promise<string[]> {
  let query = db
    .selectFrom('executions')
    .select('execution_id')
    .where('run_key', '=', (runs) => runs.selectFrom('runs').select('key').where('id', '=', runId));
  if (stepId !== undefined) query = query.where('step_id', '=', stepId);
  const rows = await query.orderBy('call_seq').execute();
  return rows.map((row) => row.execution_id);
}
