import type { LiveOutputTail } from '@stepwise/core/store';
import type { PostgresConnection } from './postgres-connection.js';

/** Upserts a call's tail for one stream: one statement, outside any journal transaction. */
export async function writeLiveTail(connection: PostgresConnection, tail: LiveOutputTail): Promise<void> {
  await connection.db
    .insertInto('live_output')
    .values({
      run_id: tail.runId,
      execution_id: tail.executionId,
      stream: tail.stream,
      step_id: tail.stepId,
      text: tail.text,
      total: tail.total,
      updated_at: tail.at,
    })
    .onConflict((conflict) =>
      conflict.columns(['run_id', 'execution_id', 'stream']).doUpdateSet((update) => ({
        step_id: update.ref('excluded.step_id'),
        text: update.ref('excluded.text'),
        total: update.ref('excluded.total'),
        updated_at: update.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

export async function readLiveTails(connection: PostgresConnection, runId: string): Promise<LiveOutputTail[]> {
  const rows = await connection.db
    .selectFrom('live_output')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('updated_at')
    .orderBy('execution_id')
    .orderBy('stream')
    .execute();
  return rows.map((row) => ({
    runId,
    stepId: row.step_id,
    executionId: row.execution_id,
    stream: row.stream as 'stdout' | 'stderr',
    text: row.text,
    total: row.total,
    at: new Date(row.updated_at).toISOString(),
  }));
}

export async function clearLiveTails(
  connection: PostgresConnection,
  runId: string,
  executionId: string,
): Promise<void> {
  await connection.db
    .deleteFrom('live_output')
    .where('run_id', '=', runId)
    .where('execution_id', '=', executionId)
    .execute();
}
