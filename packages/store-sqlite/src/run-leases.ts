import type { Lease } from '@stepwise/core/store';
import type Database from 'better-sqlite3';

/** The lease columns of a `runs` row. */
export interface LeaseColumns {
  readonly lease_owner: string | null;
  readonly lease_token: number;
  readonly lease_ttl_ms: number | null;
  readonly lease_expires_at: string | null;
}

/** The run's lease as its `runs` row holds it; `undefined` when nobody holds it. */
export function heldLease(runId: string, row: LeaseColumns | undefined): Lease | undefined {
  if (!row || row.lease_owner === null) return undefined;
  return {
    runId,
    owner: row.lease_owner,
    token: row.lease_token,
    ttlMs: row.lease_ttl_ms ?? 0,
    expiresAt: row.lease_expires_at ?? '',
  };
}

export interface LeaseStatements {
  readonly select: Database.Statement<[string], LeaseColumns>;
  readonly take: Database.Statement<[string, string, number, number, string]>;
  readonly renew: Database.Statement<[string, string, number]>;
  readonly release: Database.Statement<[string, number]>;
}

export function prepareLeaseStatements(sqlite: Database.Database): LeaseStatements {
  return {
    select: sqlite.prepare('select lease_owner, lease_token, lease_ttl_ms, lease_expires_at from runs where id = ?'),
    take: sqlite.prepare(
      `insert into runs (id, lease_owner, lease_token, lease_ttl_ms, lease_expires_at) values (?, ?, ?, ?, ?)
       on conflict (id) do update set lease_owner = excluded.lease_owner, lease_token = excluded.lease_token,
         lease_ttl_ms = excluded.lease_ttl_ms, lease_expires_at = excluded.lease_expires_at`,
    ),
    renew: sqlite.prepare('update runs set lease_expires_at = ? where id = ? and lease_token = ?'),
    release: sqlite.prepare(
      `update runs set lease_owner = null, lease_ttl_ms = null, lease_expires_at = null
       where id = ? and lease_token = ? and lease_owner is not null`,
    ),
  };
}

/**
 * Gives the run to `owner` with the next fencing token, unless another owner holds an unexpired
 * lease (then `undefined`). Run it in an IMMEDIATE transaction: the read and the write are one step.
 */
export function takeLease(
  statements: LeaseStatements,
  runId: string,
  owner: string,
  ttlMs: number,
  now: number,
): Lease | undefined {
  const row = statements.select.get(runId);
  const held = heldLease(runId, row);
  if (held && held.owner !== owner && Date.parse(held.expiresAt) > now) return undefined;
  const lease: Lease = {
    runId,
    owner,
    token: (row?.lease_token ?? 0) + 1,
    ttlMs,
    expiresAt: new Date(now + ttlMs).toISOString(),
  };
  statements.take.run(runId, owner, lease.token, ttlMs, lease.expiresAt);
  return lease;
}
