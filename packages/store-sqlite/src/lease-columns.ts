import type { Lease } from '@stepwise/core';

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
