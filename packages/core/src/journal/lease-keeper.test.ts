import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCodes, StepwiseError } from '../errors.js';
import { MemoryStore } from '../store/memory-store.js';
import { LeaseKeeper, leaseDeadline } from './lease-keeper.js';
import type { Lease, RunStore } from './run-store.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const never = <T>() => new Promise<T>(() => undefined);

const keepers: LeaseKeeper[] = [];
afterEach(() => {
  for (const keeper of keepers.splice(0)) keeper.stop();
});

/** A keeper over `renew`, recording when it was asked and what it lost. */
function keep(lease: Lease, renew: RunStore['renewLease'], deadline?: number) {
  const asked: number[] = [];
  const lost: StepwiseError[] = [];
  const keeper = new LeaseKeeper({
    store: {
      renewLease: (held) => {
        asked.push(Date.now());
        return renew(held);
      },
    },
    lease,
    ...(deadline === undefined ? {} : { deadline }),
    onLost: (error) => lost.push(error),
  });
  keepers.push(keeper);
  return { keeper, asked, lost };
}

async function leased(ttlMs: number) {
  const store = new MemoryStore();
  const lease = (await store.acquireLease('run_keeper', 'me', ttlMs)) as Lease;
  return { store, lease };
}

describe('LeaseKeeper', () => {
  it('renews every third of the TTL and keeps the lease while the store answers', async () => {
    const { store, lease } = await leased(300);
    const { keeper, asked, lost } = keep(lease, (held) => store.renewLease(held));
    await pause(1_000);
    // 1 000 ms at one renewal per 100 ms; a loaded machine may fire a few late, never early.
    expect(asked.length).toBeGreaterThanOrEqual(6);
    expect(asked.length).toBeLessThanOrEqual(10);
    expect(lost).toEqual([]);
    expect(keeper.check()).toBeUndefined();
    expect(Date.parse(keeper.lease.expiresAt)).toBeGreaterThan(Date.parse(lease.expiresAt));
  });

  it('declares the lease lost (E501 naming the run) the moment the store refuses a renewal', async () => {
    // A TTL long enough that no stall of a loaded machine reaches the deadline before the first renewal.
    const { store, lease } = await leased(1_500);
    const { keeper, asked, lost } = keep(lease, async () => {
      throw new StepwiseError(ErrorCodes.LEASE_CONFLICT, 'lease token 1 is stale');
    });
    const started = Date.now();
    while (lost.length === 0 && Date.now() - started < 1_400) await pause(5);
    expect(asked.length).toBe(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]?.code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(lost[0]?.message).toContain('run_keeper');
    expect(lost[0]?.message).toContain('lease token 1 is stale');
    expect(keeper.check()).toBe(lost[0]);
    await pause(250);
    // Stopped: no more renewals, no second report.
    expect(asked.length).toBe(1);
    expect(lost).toHaveLength(1);
    await store.close();
  });

  it('treats a lease whose time ran out unrenewed as lost, without waiting for the store', async () => {
    const { lease } = await leased(200);
    const { keeper, asked, lost } = keep(lease, () => never());
    expect(keeper.check()).toBeUndefined();
    // Its deadline timer declares it lost; a loaded machine may fire it late, so wait for it.
    for (let waited = 0; lost.length === 0 && waited < 5_000; waited += 20) await pause(20);
    // At most the one renewal that never answered (none if the machine stalled past the deadline).
    expect(asked.length).toBeLessThanOrEqual(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]?.code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(lost[0]?.message).toMatch(/lost the lease on run run_keeper: it was not renewed within its 200 ms/);
  });

  it('checks the deadline on demand, before any timer fires', async () => {
    const { lease } = await leased(60_000);
    // Held until a second ago (a slow journal read, a paused process): already past its time.
    const { keeper, lost } = keep(lease, () => never(), Date.now() - 1_000);
    expect(keeper.check()?.code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(lost).toHaveLength(1);
  });

  it('asks again after a retryable store error, and keeps the lease when the store comes back in time', async () => {
    const { store, lease } = await leased(300);
    let failures = 1;
    const { keeper, asked, lost } = keep(lease, async (held) => {
      if (failures-- > 0)
        throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'connection reset', { retryable: true });
      return store.renewLease(held);
    });
    await pause(700);
    expect(asked.length).toBeGreaterThanOrEqual(3);
    expect(lost).toEqual([]);
    expect(keeper.check()).toBeUndefined();
  });

  it('loses the lease to a store that stays away past the deadline', async () => {
    const { lease } = await leased(300);
    const { lost } = keep(lease, async () => {
      throw new StepwiseError(ErrorCodes.STORE_UNAVAILABLE, 'connection refused', { retryable: true });
    });
    await pause(200);
    expect(lost).toEqual([]);
    await pause(250);
    expect(lost).toHaveLength(1);
    expect(lost[0]?.message).toContain('not renewed within its 300 ms');
  });

  it('treats a failure that is not retryable (not a StepwiseError) as a lost lease, keeping it as the cause', async () => {
    const { lease } = await leased(300);
    const broken = new TypeError('renewLease is broken');
    const { lost } = keep(lease, async () => {
      throw broken;
    });
    await pause(150);
    expect(lost[0]?.code).toBe(ErrorCodes.LEASE_CONFLICT);
    expect(lost[0]?.cause).toBe(broken);
  });

  it('loses the lease, not the process, to a store that throws a value with no text (no prototype)', async () => {
    const { lease } = await leased(300);
    const hostile = Object.create(null) as object;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { lost } = keep(lease, async () => {
        throw hostile;
      });
      await pause(150);
      expect(lost[0]?.code).toBe(ErrorCodes.LEASE_CONFLICT);
      expect(lost[0]?.message).toContain('cannot be shown as text');
      expect(lost[0]?.cause).toBe(hostile);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('leaseDeadline', () => {
  const sentAt = 1_000_000;
  const lease = (expiresAt: string): Lease => ({ runId: 'r', owner: 'me', token: 1, ttlMs: 30_000, expiresAt });
  const iso = (ms: number) => new Date(ms).toISOString();

  it("is the store's expiry when the clocks agree, however long the store took to answer", () => {
    // Granted 2 s after the request (a store opening its database): the lease runs from then.
    expect(leaseDeadline(lease(iso(sentAt + 2_000 + 30_000)), sentAt, sentAt + 2_000)).toBe(sentAt + 32_000);
  });

  it('is never later than the TTL after the answer arrived: a store clock ahead cannot stretch it', () => {
    expect(leaseDeadline(lease(iso(sentAt + 3_600_000)), sentAt, sentAt + 5)).toBe(sentAt + 5 + 30_000);
  });

  it('is never earlier than the TTL after the request was sent: a store clock behind cannot cut it short', () => {
    expect(leaseDeadline(lease(iso(sentAt - 3_600_000)), sentAt, sentAt + 5)).toBe(sentAt + 30_000);
  });

  it('is the TTL after the request when the expiry cannot be read', () => {
    expect(leaseDeadline(lease('not a time'), sentAt, sentAt + 5)).toBe(sentAt + 30_000);
  });
});
