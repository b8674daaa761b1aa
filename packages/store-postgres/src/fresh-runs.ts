import type { CancelRequest, Lease } from '@stepwise/core/store';

/**
 * Runs a worker of this process just claimed for the first time, keyed by the store's connection
 * (internal to the package, so the store's public shape does not change). First, their journal:
 * no worker started them, so they have no journal and the engine's look at the run (`getRun`, right
 * before it starts the run) is answered from memory instead of by a round trip. Each hint answers
 * once. A run that has a journal anyway (started outside the queue under the same id) still comes
 * out right: the engine's first append expects an empty journal, is refused (E502), and the engine
 * looks again — by then the hint is spent, so it reads the journal and replays or resumes the run.
 */
const hints = new WeakMap<object, Set<string>>();

/** The next `getRun(runId)` of the store of `connection` answers "no journal" without asking. */
export function expectNoJournal(connection: object, runId: string): void {
  let set = hints.get(connection);
  if (!set) {
    set = new Set();
    hints.set(connection, set);
  }
  set.add(runId);
}

/** True once after `expectNoJournal(connection, runId)`; removes the hint. */
export function takeNoJournalHint(connection: object, runId: string): boolean {
  return hints.get(connection)?.delete(runId) ?? false;
}

/**
 * The lease a worker's first claim of a run took in the claim's statement (the run had no row in
 * `runs`, so nobody held it), for the engine's `acquireLease` to take from memory instead of by a
 * statement of its own. `sentAt` is when the claim was sent, on this machine's clock.
 */
export interface ClaimedLease {
  readonly owner: string;
  readonly token: number;
  readonly ttlMs: number;
  readonly expiresAt: Date;
  readonly sentAt: number;
  readonly cancelRequest?: CancelRequest;
}

const leases = new WeakMap<object, Map<string, ClaimedLease>>();

/** The next `acquireLease` of `runId` in the store of `connection` may answer with `lease`. */
export function expectClaimedLease(connection: object, runId: string, lease: ClaimedLease): void {
  let map = leases.get(connection);
  if (!map) {
    map = new Map();
    leases.set(connection, map);
  }
  map.set(runId, lease);
}

/** The lease the claim of `runId` took, once; removes it. */
export function takeClaimedLease(connection: object, runId: string): ClaimedLease | undefined {
  const map = leases.get(connection);
  const lease = map?.get(runId);
  map?.delete(runId);
  return lease;
}

/**
 * The claimed lease as the engine's own, when it asks for the claim's TTL soon enough (within a
 * quarter of it); `undefined` otherwise (the caller takes the lease by a statement). The engine
 * counts the lease's time from its own request (core's `leaseDeadline`: `sentAt + ttlMs`), which
 * comes after the claim's: the TTL it gets is shortened by the time since the claim was sent, so its
 * deadline never falls after the one the database computed, and renewals keep that TTL.
 */
export function leaseFromClaim(runId: string, owner: string, ttlMs: number, claimed: ClaimedLease): Lease | undefined {
  const elapsed = Math.ceil(Date.now() - claimed.sentAt);
  if (ttlMs !== claimed.ttlMs || elapsed >= ttlMs / 4) return undefined;
  return { ...claimedLease(runId, claimed), owner, ttlMs: ttlMs - Math.max(0, elapsed) };
}

/** The claimed lease as the claim's owner holds it. */
export function claimedLease(runId: string, claimed: ClaimedLease): Lease {
  const { owner, token, ttlMs, cancelRequest } = claimed;
  return {
    runId,
    owner,
    token,
    ttlMs,
    expiresAt: claimed.expiresAt.toISOString(),
    ...(cancelRequest ? { cancelRequest } : {}),
  };
}

/** A worker's first claim of `runId`: its engine finds no journal, and takes `lease` (if the claim took it) from memory. */
export function expectFreshRun(connection: object, runId: string, lease: ClaimedLease | undefined): void {
  expectNoJournal(connection, runId);
  if (lease) expectClaimedLease(connection, runId, lease);
}

/** Drops what the engine did not take (it failed before it looked); a lease the claim took, to give back. */
export function forgetFreshRun(connection: object, runId: string): Lease | undefined {
  takeNoJournalHint(connection, runId);
  const unused = takeClaimedLease(connection, runId);
  return unused && claimedLease(runId, unused);
}
