import type { Plan, RunOptions } from '@stepwise/core';
import { type Kysely, sql } from 'kysely';
import type { PostgresStoreDatabase } from './database-schema.js';
import type { ClaimedLease } from './fresh-runs.js';
import type { PostgresConnection } from './postgres-connection.js';
import { queueChannel } from './queue-notifications.js';
import { type CancelColumns, cancelColumns, cancelRequestOf } from './run-leases.js';

/** What `enqueue` keeps for the worker that starts the run. */
export interface QueuedRunOptions {
  readonly authorization?: RunOptions['authorization'];
  readonly parentRunId?: string;
}

export interface ClaimedRun {
  readonly runId: string;
  readonly plan: Plan;
  readonly options: QueuedRunOptions;
  /** 1 the first time a worker claims the run; more after takeovers and retries. */
  readonly claims: number;
  /** The run's lease, taken by the claim (a first claim of a run with no row in `runs`). */
  readonly lease?: ClaimedLease;
}

export interface ClaimRequest {
  readonly queue: string;
  readonly owner: string;
  /** At most this many runs. */
  readonly count: number;
  readonly ttlMs: number;
  /** At most this many runs of the queue held at once by all workers together. */
  readonly queueLimit: number | undefined;
  /**
   * Only runs a worker started before: claims that expired (their worker died) and runs given back
   * to the queue after they were claimed. A full worker takes these over with its takeover room.
   */
  readonly takeoverOnly?: boolean;
}

interface ClaimRow extends CancelColumns {
  readonly run_id: string;
  readonly plan: Plan;
  readonly run_options: QueuedRunOptions | null;
  readonly claims: number;
  readonly lease_token: number | null;
  readonly lease_expires_at: Date | null;
}

/**
 * Claims waiting runs, and runs whose claim expired (their worker died), with `FOR UPDATE SKIP LOCKED`
 * so concurrent workers never wait for each other nor take the same run. Runs started before (an
 * expired claim, a run given back after a claim) come first, before fresh ones of any priority: they
 * already began, and a busy cluster must not leave them behind new work. With a queue limit, claims of
 * the queue are serialised by a transaction-scoped advisory lock, so the count they check is exact.
 *
 * The same statement takes the lease of each run claimed for the first time, by creating its row in
 * `runs` holding it (token 1), as `acquireLease` would: the engine's `acquireLease` then answers from
 * memory (see fresh-runs.ts). Only where no row exists (`do nothing` takes no lock on one that does):
 * a run taken over is leased by its engine as before, so a claim never waits for the row of a run whose
 * old worker is still appending (an append locks the run's row, then its queue row).
 */
export async function claimRuns(connection: PostgresConnection, request: ClaimRequest): Promise<ClaimedRun[]> {
  const queueTable = connection.table('work_queue');
  const ttl = sql`clock_timestamp() + ${request.ttlMs} * interval '1 millisecond'`;
  // Without a queue limit the claim is one statement: no transaction round trips.
  const run = <T>(body: (db: Kysely<PostgresStoreDatabase>) => Promise<T>) =>
    request.queueLimit === undefined ? body(connection.db) : connection.db.transaction().execute(body);
  const sentAt = Date.now();
  return run(async (trx) => {
    const room = await roomInQueue(connection, trx, request);
    if (room <= 0) return [];
    const fresh = request.takeoverOnly ? sql`false` : sql`state = 'queued'`;
    const claimed = await sql<ClaimRow>`
      with claimed as (
        update ${queueTable} w
        set state = 'claimed', claimed_by = ${request.owner}, claims = w.claims + 1, claim_expires_at = ${ttl}
        from (
          select run_id from ${queueTable}
          where queue = ${request.queue} and available_at <= clock_timestamp()
            and (${fresh} or (state = 'queued' and claims > 0)
              or (state = 'claimed' and claim_expires_at <= clock_timestamp()))
          order by claims > 0 desc, priority desc, enqueued_at, run_id
          limit ${room}
          for update skip locked
        ) candidate
        where w.run_id = candidate.run_id
        returning w.run_id, w.plan, w.run_options, w.claims),
      leased as (
        insert into ${connection.table('runs')} as r (id, lease_owner, lease_token, lease_ttl_ms, lease_expires_at)
        select run_id, ${request.owner}::text, 1, ${request.ttlMs}::integer, ${ttl} from claimed where claims = 1
        on conflict (id) do nothing
        returning r.id, r.lease_token, r.lease_expires_at)
      select c.run_id, c.plan, c.run_options, c.claims, l.lease_token, l.lease_expires_at, ${cancelColumns(connection, 'l')}
      from claimed c left join leased l on l.id = c.run_id`.execute(trx);
    return claimed.rows.map((row) => claimedRun(row, request, sentAt));
  });
}

/** How many runs the claim may take: `count`, or less under a queue limit (in the claim's transaction). */
async function roomInQueue(
  connection: PostgresConnection,
  trx: Kysely<PostgresStoreDatabase>,
  request: ClaimRequest,
): Promise<number> {
  if (request.queueLimit === undefined) return request.count;
  await sql`select pg_advisory_xact_lock(hashtext(${`stepwise:${connection.schema}:queue:${request.queue}`}))`.execute(
    trx,
  );
  const live = await sql<{ held: number }>`
    select count(*)::int as held from ${connection.table('work_queue')}
    where queue = ${request.queue} and state = 'claimed' and claim_expires_at > clock_timestamp()`.execute(trx);
  return Math.min(request.count, Math.max(0, request.queueLimit - (live.rows[0]?.held ?? 0)));
}

function claimedRun(row: ClaimRow, request: ClaimRequest, sentAt: number): ClaimedRun {
  const { lease_token: token, lease_expires_at: expiresAt } = row;
  const lease: ClaimedLease | undefined =
    token === null || expiresAt === null
      ? undefined
      : { owner: request.owner, token, ttlMs: request.ttlMs, expiresAt, sentAt, ...cancelRequestOf(row) };
  return {
    runId: row.run_id,
    plan: row.plan,
    options: row.run_options ?? {},
    claims: row.claims,
    ...(lease ? { lease } : {}),
  };
}

/** Extends the claims `owner` still holds; returns the run ids it lost (another worker took them over). */
export async function renewClaims(
  connection: PostgresConnection,
  owner: string,
  runIds: readonly string[],
  ttlMs: number,
): Promise<string[]> {
  if (runIds.length === 0) return [];
  const renewed = await sql<{ run_id: string }>`
    update ${connection.table('work_queue')}
    set claim_expires_at = clock_timestamp() + ${ttlMs} * interval '1 millisecond'
    where claimed_by = ${owner} and state = 'claimed' and run_id = any(${[...runIds]})
    returning run_id`.execute(connection.db);
  const kept = new Set(renewed.rows.map((row) => row.run_id));
  return runIds.filter((runId) => !kept.has(runId));
}

/** The run ended (any status): nobody claims it again. Whoever saw the end may record it. */
export async function finishQueuedRun(
  connection: PostgresConnection,
  runId: string,
  status: string,
  error?: string,
): Promise<void> {
  await connection.db
    .updateTable('work_queue')
    .set({
      state: 'done',
      result_status: status,
      finished_at: new Date().toISOString(),
      claimed_by: null,
      claim_expires_at: null,
      last_error: error ?? null,
    })
    .where('run_id', '=', runId)
    .execute();
}

/**
 * Gives a run of `queue` back, to be claimed again after `delayMs` (only if `owner` still holds it),
 * and tells the queue's listening workers how long until then.
 */
export async function releaseClaim(
  connection: PostgresConnection,
  queue: string,
  runId: string,
  owner: string,
  delayMs: number,
  error: string | undefined,
): Promise<void> {
  const delay = Math.max(0, Math.round(delayMs));
  await sql`
    with released as (
      update ${connection.table('work_queue')}
      set state = 'queued', claimed_by = null, claim_expires_at = null, last_error = ${error ?? null},
        available_at = clock_timestamp() + ${delay} * interval '1 millisecond'
      where run_id = ${runId} and claimed_by = ${owner} and state = 'claimed'
      returning run_id)
    select pg_notify(${queueChannel(connection.schema, queue)}, ${String(delay)}) from released`.execute(connection.db);
}
