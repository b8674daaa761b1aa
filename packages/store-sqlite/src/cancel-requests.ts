import type { CancelRequest, Lease } from '@stepwise/core/store';
import type Database from 'better-sqlite3';
import { lastSeqOf } from './view-sql.js';

interface CancelRequestRow {
  readonly requested_by: string;
  readonly reason: string | null;
  readonly requested_at: string;
}

export interface CancelRequestStatements {
  readonly select: Database.Statement<[string], CancelRequestRow>;
  readonly record: Database.Statement<[string, string | null, string, string]>;
}

/** The statements of `cancel_requests` (schema version 6); a run-end's delete is the journal writer's. */
export function prepareCancelRequestStatements(sqlite: Database.Database): CancelRequestStatements {
  return {
    select: sqlite.prepare(
      `select c.requested_by, c.reason, c.requested_at from cancel_requests c join runs r on r.key = c.run_key
       where r.id = ?`,
    ),
    // Only a run with a journal and no run-end since its last start: an ended or waiting run has nothing to cancel.
    record: sqlite.prepare(
      `insert into cancel_requests (run_key, requested_by, reason, requested_at)
       select r.key, ?, ?, ? from runs r where r.id = ? and r.status = 'running' and ${lastSeqOf('r')} > 0
       on conflict (run_key) do update set requested_by = excluded.requested_by, reason = excluded.reason,
         requested_at = excluded.requested_at`,
    ),
  };
}

/** Records (or replaces) the run's request; false when the run is not running. */
export function recordRequest(statements: CancelRequestStatements, runId: string, request: CancelRequest): boolean {
  return statements.record.run(request.by, request.reason ?? null, request.at, runId).changes > 0;
}

/** `lease` with the run's pending cancel request, if any (`Lease.cancelRequest`); `undefined` stays so. */
export function withCancelRequest<L extends Lease | undefined>(statements: CancelRequestStatements, lease: L): L {
  if (lease === undefined) return lease;
  const { cancelRequest: _previous, ...current } = lease as Lease;
  const row = statements.select.get(lease.runId);
  if (!row) return current as L;
  const request: CancelRequest = {
    by: row.requested_by,
    ...(row.reason === null ? {} : { reason: row.reason }),
    at: row.requested_at,
  };
  return { ...current, cancelRequest: request } as L;
}
