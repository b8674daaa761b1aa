import type { Lease } from '@stepwise/core';
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
