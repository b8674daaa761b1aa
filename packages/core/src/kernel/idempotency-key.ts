import { createHash } from 'node:crypto';

/**
 * `ctx.idempotencyKey` of a plan step's calls: `idem_` + a hash of (run id, step id, plan revision).
 * Not of the attempt: a retry after a timeout, or a resume after a crash, is the same effect asked
 * for again, and a tool that keys its effect by it (a unique key in a database, a payment provider's
 * idempotency header) performs it once. A revision of the plan starts new keys (the step may have
 * changed). 128 bits, hex.
 */
export function deriveIdempotencyKey(runId: string, stepId: string, revision: number): string {
  const digest = createHash('sha256').update(`${runId}\u0000${stepId}\u0000${revision}`).digest('hex');
  return `idem_${digest.slice(0, 32)}`;
}
