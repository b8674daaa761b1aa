import type { Plan, RunOptions } from '@stepwise/core';
import { type Kysely, sql } from 'kysely';
import type { PostgresStoreDatabase } from './database-schema.js';
import type { PostgresConnection } from './postgres-connection.js';
import { queueChannel } from './queue-notifications.js';

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

/**
 * Claims waiting runs, and runs whose claim expired (their worker died), with `FOR UPDATE SKIP LOCKED`
 * so concurrent workers never wait for each other nor take the same run. Runs started before (an
 * expired claim, a run given back after a claim) come first, before fresh ones of any priority: they
 * already began, and a busy cluster must not leave them behind new work. With a queue limit, claims of
 * the queue are serialised by a transaction-scoped advisory lock, so the count they check is exact.
 */
export async function claimRuns(connection: PostgresConnection, request: ClaimRequest): Promise<ClaimedRun[]> {
  const queueTable = connection.table('work_queue');
  // Without a queue limit the claim is one statement: no transaction round trips.
  const run = <T>(body: (db: Kysely<PostgresStoreDatabase>) => Promise<T>) =>
    request.queueLimit === undefined ? body(connection.db) : connection.db.transaction().execute(body);
  return run(async (trx) => {
    let room = request.count;
    if (request.queueLimit !== undefined) {
      await sql`select pg_advisory_xact_lock(hashtext(${`stepwise:${connection.schema}:queue:${request.queue}`}))`.execute(
        trx,
      );
      const live = await sql<{ held: number }>`
        select count(*)::int as held from ${queueTable}
        where queue = ${request.queue} and state = 'claimed' and claim_expires_at > clock_timestamp()`.execute(trx);
      room = Math.min(room, Math.max(0, request.queueLimit - (live.rows[0]?.held ?? 0)));
    }
    if (room <= 0) return [];
    const fresh = request.takeoverOnly ? sql`false` : sql`state = 'queued'`;
    const claimed = await sql<{ run_id: string; plan: Plan; run_options: QueuedRunOptions | null; claims: number }>`
      update ${queueTable} w
      set state = 'claimed', claimed_by = ${request.owner}, claims = w.claims + 1,
        claim_expires_at = clock_timestamp() + ${request.ttlMs} * interval '1 millisecond'
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
      returning w.run_id, w.plan, w.run_options, w.claims`.execute(trx);
    return claimed.rows.map((row) => ({
      runId: row.run_id,
      plan: row.plan,
      options: row.run_options ?? {},
      claims: row.claims,
    }));
  });
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
