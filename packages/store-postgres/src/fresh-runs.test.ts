import { describe, expect, it } from 'vitest';
import { type ClaimedLease, leaseFromClaim } from './fresh-runs.js';

const claimed = (sentAgoMs: number, ttlMs = 1_000): ClaimedLease => {
  const sentAt = Date.now() - sentAgoMs;
  // What the database computed: its clock when it ran the claim (after it was sent), plus the TTL.
  return { owner: 'worker:1', token: 1, ttlMs, expiresAt: new Date(sentAt + 5 + ttlMs), sentAt };
};

describe('a lease taken by a first claim, given to the engine', () => {
  it('ends no later than the database’s lease, although the engine counts from its own, later request', () => {
    const claim = claimed(120);
    const askedAt = Date.now();
    const lease = leaseFromClaim('run_1', 'engine:1', 1_000, claim);
    const answeredAt = Date.now();
    expect(lease).toMatchObject({
      runId: 'run_1',
      owner: 'engine:1',
      token: 1,
      expiresAt: claim.expiresAt.toISOString(),
    });
    const ttlMs = lease?.ttlMs ?? Number.NaN;
    // The engine holds it unrenewed until its request plus the lease's TTL (core's leaseDeadline, at
    // least that): no later than the claim's request plus the claim's TTL, before the database's expiry.
    expect(askedAt + ttlMs).toBeLessThanOrEqual(claim.sentAt + claim.ttlMs);
    expect(ttlMs).toBeGreaterThanOrEqual(1_000 - (answeredAt + 1 - claim.sentAt));
    expect(claim.sentAt + claim.ttlMs).toBeLessThan(claim.expiresAt.getTime());
  });

  it('is not given when asked with another TTL, or a quarter of the TTL after the claim', () => {
    expect(leaseFromClaim('run_1', 'engine:1', 2_000, claimed(10))).toBeUndefined();
    expect(leaseFromClaim('run_1', 'engine:1', 1_000, claimed(260))).toBeUndefined();
  });
});
