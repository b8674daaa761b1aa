import type { LiveOutputTail } from '@stepwise/core/store';
import type Database from 'better-sqlite3';

interface LiveOutputRow {
  readonly execution_id: string;
  readonly stream: 'stdout' | 'stderr';
  readonly step_id: string;
  readonly text: string;
  readonly total: number;
  readonly updated_at: string;
}

export interface LiveOutputStatements {
  readonly write: Database.Statement<[string, string, string, string, number, string, string]>;
  readonly read: Database.Statement<[string], LiveOutputRow>;
  readonly clear: Database.Statement<[string, string]>;
}

/** The statements of `live_output` (schema version 7); a run-end's delete is the journal writer's. */
export function prepareLiveOutputStatements(sqlite: Database.Database): LiveOutputStatements {
  return {
    // Only for a run the store knows: a tail of a run without a journal has nowhere to go.
    write: sqlite.prepare(
      `insert into live_output (run_key, execution_id, stream, step_id, text, total, updated_at)
       select r.key, ?, ?, ?, ?, ?, ? from runs r where r.id = ?
       on conflict (run_key, execution_id, stream) do update set step_id = excluded.step_id,
         text = excluded.text, total = excluded.total, updated_at = excluded.updated_at`,
    ),
    read: sqlite.prepare(
      `select l.execution_id, l.stream, l.step_id, l.text, l.total, l.updated_at
       from live_output l join runs r on r.key = l.run_key where r.id = ? order by l.updated_at, l.execution_id, l.stream`,
    ),
    clear: sqlite.prepare(
      'delete from live_output where run_key = (select key from runs where id = ?) and execution_id = ?',
    ),
  };
}

export function writeTail(statements: LiveOutputStatements, tail: LiveOutputTail): void {
  statements.write.run(tail.executionId, tail.stream, tail.stepId, tail.text, tail.total, tail.at, tail.runId);
}

export function readTails(statements: LiveOutputStatements, runId: string): LiveOutputTail[] {
  return statements.read.all(runId).map((row) => ({
    runId,
    stepId: row.step_id,
    executionId: row.execution_id,
    stream: row.stream,
    text: row.text,
    total: row.total,
    at: row.updated_at,
  }));
}

export function clearTails(statements: LiveOutputStatements, runId: string, executionId: string): void {
  statements.clear.run(runId, executionId);
}
