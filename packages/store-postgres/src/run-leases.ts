import { ErrorCodes, StepwiseError } from '@stepwise/core';
import type { CancelRequest, Lease } from '@stepwise/core/store';
import { type RawBuilder, sql } from 'kysely';
import type { PostgresConnection } from './postgres-connection.js';
import { perSchema, type Queryable, runStatement, statement } from './statements.js';

interface LeaseRow extends CancelColumns {
  readonly lease_token: number;
  readonly lease_expires_at: Date;
}

/** The columns `cancelColumns` reads. */
export interface CancelColumns {
  readonly cancel_by: string | null;
  readonly cancel_reason: string | null;
  readonly cancel_at: Date | null;
}

/** The run's pending cancel request, if `cancelColumns` found one. */
export function cancelRequestOf(row: CancelColumns): { cancelRequest?: CancelRequest } {
  if (row.cancel_by === null || row.cancel_at === null) return {};
  return {
    cancelRequest: {
      by: row.cancel_by,
      ...(row.cancel_reason === null ? {} : { reason: row.cancel_reason }),
      at: row.cancel_at.toISOString(),
    },
  };
}

const toLease = (runId: string, owner: string, ttlMs: number, row: LeaseRow): Lease => ({
  runId,
  owner,
  token: row.lease_token,
  ttlMs,
  expiresAt: row.lease_expires_at.toISOString(),
  ...cancelRequestOf(row),
});

/**
 * The run's pending cancel request, read in the statement that grants or renews its lease (`run` is
 * the alias of the run's row, whose `id` names it).
 */
export function cancelColumns(connection: PostgresConnection, run = 'r'): RawBuilder<unknown> {
  const requests = connection.table('cancel_requests');
  const column = (name: string) =>
    sql`(select c.${sql.id(name)} from ${requests} c where c.run_id = ${sql.ref(`${run}.id`)})`;
  return sql`${column('requested_by')} as cancel_by, ${column('reason')} as cancel_reason,
    ${column('requested_at')} as cancel_at`;
}

/**
 * Records a cancel request for a run that is running (a journal and no run-end since it last
 * started) or waits in the work queue; `false` (nothing recorded) otherwise. One statement.
 */
export async function requestCancel(
  connection: PostgresConnection,
  runId: string,
  request: CancelRequest,
): Promise<boolean> {
  const result = await sql<{ run_id: string }>`
    insert into ${connection.table('cancel_requests')} (run_id, requested_by, reason, requested_at)
    select ${runId}, ${request.by}, ${request.reason ?? null}, ${request.at}::timestamptz
    where exists (select 1 from ${connection.table('runs')} r where r.id = ${runId} and r.status = 'running' and r.last_seq > 0)
      or (exists (select 1 from ${connection.table('work_queue')} q where q.run_id = ${runId} and q.state in ('queued', 'claimed'))
        and not exists (select 1 from ${connection.table('runs')} r where r.id = ${runId} and r.last_seq > 0))
    on conflict (run_id) do update set requested_by = excluded.requested_by, reason = excluded.reason,
      requested_at = excluded.requested_at
    returning run_id`.execute(connection.db);
  return result.rows.length > 0;
}

const leaseStatements = perSchema((schema) => {
  const cancel = (name: string) => `(select c.${name} from "${schema}"."cancel_requests" c where c.run_id = r.id)`;
  return {
    // A new run's row is created holding the lease (token 1); an existing one is taken only when
    // free, already this owner's, or expired.
    acquire:
      statement(`insert into "${schema}"."runs" as r (id, lease_owner, lease_token, lease_ttl_ms, lease_expires_at)
      values ($1, $2::text, 1, $3::integer, clock_timestamp() + $3::integer * interval '1 millisecond')
      on conflict (id) do update set lease_owner = excluded.lease_owner, lease_token = r.lease_token + 1,
        lease_ttl_ms = excluded.lease_ttl_ms, lease_expires_at = excluded.lease_expires_at
      where r.lease_owner is null or r.lease_owner = $2::text or r.lease_expires_at <= clock_timestamp()
      returning lease_token, lease_expires_at, ${cancel('requested_by')} as cancel_by,
        ${cancel('reason')} as cancel_reason, ${cancel('requested_at')} as cancel_at`),
    release: statement(`update "${schema}"."runs" set lease_owner = null, lease_ttl_ms = null, lease_expires_at = null
      where id = $1 and lease_token = $2::integer`),
  };
});

/**
 * One statement. Expiry is judged by the database's clock, never the caller's: workers on several
 * machines agree on it whatever their clocks say. `client` is the pool, or a group commit's client.
 */
export async function acquireLease(
  client: Queryable,
  schema: string,
  runId: string,
  owner: string,
  ttlMs: number,
): Promise<Lease | undefined> {
  const [row] = await runStatement<LeaseRow>(client, leaseStatements(schema).acquire, [runId, owner, ttlMs]);
  return row ? toLease(runId, owner, ttlMs, row) : undefined;
}

/** Only the current token may renew: expiry alone does not void a lease nobody took. */
export async function renewLease(connection: PostgresConnection, lease: Lease): Promise<Lease> {
  const runs = connection.table('runs');
  const result = await sql<LeaseRow>`
    update ${runs} as r set lease_expires_at = clock_timestamp() + ${lease.ttlMs} * interval '1 millisecond'
    where r.id = ${lease.runId} and r.lease_token = ${lease.token} and r.lease_owner is not null
    returning r.lease_token, r.lease_expires_at, ${cancelColumns(connection)}`.execute(connection.db);
  const row = result.rows[0];
  if (!row) {
    const held = await connection.db
      .selectFrom('runs')
      .select(['lease_owner', 'lease_token'])
      .where('id', '=', lease.runId)
      .executeTakeFirst();
    throw new StepwiseError(
      ErrorCodes.LEASE_CONFLICT,
      `lease token ${lease.token} on run ${lease.runId} is stale${held?.lease_owner ? ` (held by ${held.lease_owner}, token ${held.lease_token})` : ''}`,
      { location: lease.runId },
    );
  }
  return toLease(lease.runId, lease.owner, lease.ttlMs, row);
}

export async function releaseLease(client: Queryable, schema: string, lease: Lease): Promise<void> {
  await runStatement(client, leaseStatements(schema).release, [lease.runId, lease.token]);
}

/** The lease columns an append checks, with the row locked for the append's transaction. */
export interface LockedRun {
  readonly last_seq: number;
  readonly lease_owner: string | null;
  readonly lease_token: number;
  readonly lease_live: boolean;
}

/** E501 unless `lease` is the run's current one, or (without a lease) nobody holds a live lease. */
export function checkAppendLease(runId: string, row: LockedRun, lease: Lease | undefined): void {
  if (lease) {
    if (row.lease_owner === null || row.lease_token !== lease.token) {
      throw new StepwiseError(
        ErrorCodes.LEASE_CONFLICT,
        `lease token ${lease.token} on run ${runId} is stale${row.lease_owner ? ` (held by ${row.lease_owner}, token ${row.lease_token})` : ''}`,
        { location: runId },
      );
    }
  } else if (row.lease_owner !== null && row.lease_live) {
    throw new StepwiseError(
      ErrorCodes.LEASE_CONFLICT,
      `run ${runId} is leased by ${row.lease_owner}; append with its lease`,
      {
        location: runId,
      },
    );
  }
}

const appendStatements = perSchema((schema) => ({
  // Creates the rows or locks the existing ones, in the order asked. The fence is this statement's
  // predicate: for an append with a lease (its token), only that token; without one, only while
  // nobody holds a live lease. A superseded writer's row is not returned (it stays locked) and its
  // append is refused before anything is written.
  lock: statement(`with requests as (select * from unnest($1::text[], $2::integer[]) as l(id, token))
    insert into "${schema}"."runs" as r (id) select id from requests
    on conflict (id) do update set last_seq = r.last_seq
    where (select case when l.token is null then (r.lease_owner is null or r.lease_expires_at <= clock_timestamp())
      else (r.lease_owner is not null and r.lease_token = l.token) end from requests l where l.id = r.id)
    returning id, last_seq, lease_owner, lease_token, coalesce(lease_expires_at > clock_timestamp(), false) as lease_live,
      xmax = 0 as created`),
  holder: statement(`select last_seq, lease_owner, lease_token,
    coalesce(lease_expires_at > clock_timestamp(), false) as lease_live from "${schema}"."runs" where id = $1`),
}));

/** An append's request to lock its run's row, under its lease. */
export interface AppendLock {
  readonly runId: string;
  readonly lease: Lease | undefined;
}

export type LockedForAppend = LockedRun & { readonly created: boolean };

/**
 * Locks the rows of the runs appended to in `client`'s transaction (one statement for a whole group
 * commit), fenced by each append's lease in the statement itself; `undefined` for a refused one.
 */
export async function lockForAppends(
  client: Queryable,
  schema: string,
  requests: readonly AppendLock[],
): Promise<(LockedForAppend | undefined)[]> {
  const rows = await runStatement<LockedForAppend & { id: string }>(client, appendStatements(schema).lock, [
    requests.map((request) => request.runId),
    requests.map((request) => (request.lease ? request.lease.token : null)),
  ]);
  const byRun = new Map(rows.map((row) => [row.id, row]));
  return requests.map((request) => byRun.get(request.runId));
}

/**
 * E501 for an append whose lock was refused (naming the current holder: the row is locked, it
 * cannot change meanwhile), or whose statement created a row, which an append under a lease cannot
 * hold; the row otherwise.
 */
export async function checkLocked(
  client: Queryable,
  schema: string,
  request: AppendLock,
  row: LockedForAppend | undefined,
): Promise<LockedRun> {
  const { runId, lease } = request;
  if (row === undefined) {
    const [held] = await runStatement<LockedRun>(client, appendStatements(schema).holder, [runId]);
    checkAppendLease(runId, held ?? { last_seq: 0, lease_owner: null, lease_token: 0, lease_live: false }, lease);
    throw new StepwiseError(ErrorCodes.LEASE_CONFLICT, `run ${runId} refused the append's lease`, { location: runId });
  }
  if (row.created) checkAppendLease(runId, row, lease);
  return row;
}
