import { ErrorCodes, StepwiseError } from '../errors.js';
import { canonicalJson } from '../plan/plan-digest.js';
import type { RunEvent } from './events.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { Lease, RunStore } from './run-store.js';

/** The longest a batch waits for a store that went away (ms), unless its lease runs out first. */
const SETTLE_APPEND_MAX_MS = 30_000;
const FIRST_DELAY_MS = 50;
const LONGEST_DELAY_MS = 1_000;

export interface SettleAppendOptions {
  /** The lease to append under, as renewed meanwhile. */
  readonly lease: () => Lease | undefined;
  /** Why the journal can no longer write (its lease lost, or another failure); `undefined` while it can. */
  readonly stopped: () => unknown;
}

/**
 * `store.append` under the keeper's lease, settled as `settleFailedAppend` says when it fails.
 * `failure` is why the journal stopped writing, if it did.
 */
export function appendOrSettle(
  store: RunStore,
  runId: string,
  batch: readonly RunEvent[],
  keeper: LeaseKeeper | undefined,
  failure: () => unknown,
): Promise<void> {
  return store.append(runId, batch, keeper?.lease).catch((error: unknown) =>
    settleFailedAppend(error, store, runId, batch, {
      lease: () => keeper?.lease,
      stopped: () => failure() ?? keeper?.check(),
    }),
  );
}

/** A store that is away for a moment (the database restarting, a connection dropped): E503, retryable. */
function isTransient(error: unknown): boolean {
  return StepwiseError.isInstance(error) && error.retryable && error.code === ErrorCodes.STORE_UNAVAILABLE;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether the batch is in the store: `all` of it (the same events, compared by their canonical
 * JSON, chain values included), `none` of it, or `other` events in its place (another writer).
 */
async function landed(store: RunStore, runId: string, batch: readonly RunEvent[]): Promise<'all' | 'none' | 'other'> {
  const stored: RunEvent[] = [];
  for await (const event of store.read(runId, (batch[0] as RunEvent).seq - 1)) {
    stored.push(event);
    if (stored.length === batch.length) break;
  }
  if (stored.length === 0) return 'none';
  const same =
    stored.length === batch.length &&
    stored.every((event, index) => canonicalJson(event) === canonicalJson(batch[index]));
  return same ? 'all' : 'other';
}

/**
 * After `store.append(runId, batch)` threw `failure`: rethrows it, unless it is a transient error
 * (E503), which a store may give although the batch committed (its answer lost). Then the outcome
 * is asked again, with a growing pause, until the store answers: the batch is there (resolves), or
 * none of it is (appended again; a conflict found then is asked about the same way). The journal
 * does not go on meanwhile, so a step whose `tool-call` was in the batch has not started its tool:
 * without this, the run failed over, and a resume found the call in flight and failed a
 * non-idempotent step (E309) whose tool never ran. Gives up once `stopped()` says why (the
 * lease's time ran out), or after `SETTLE_APPEND_MAX_MS`, with the store's error.
 */
export async function settleFailedAppend(
  failure: unknown,
  store: RunStore,
  runId: string,
  batch: readonly RunEvent[],
  options: SettleAppendOptions,
): Promise<void> {
  if (!isTransient(failure)) throw failure;
  const giveUpAt = Date.now() + SETTLE_APPEND_MAX_MS;
  let delay = FIRST_DELAY_MS;
  for (;;) {
    await sleep(delay);
    delay = Math.min(delay * 2, LONGEST_DELAY_MS);
    const stopped = options.stopped();
    if (stopped !== undefined) throw stopped;
    if (Date.now() > giveUpAt) throw failure;
    let found: 'all' | 'none' | 'other';
    try {
      found = await landed(store, runId, batch);
    } catch (error) {
      if (isTransient(error)) continue;
      throw error;
    }
    if (found === 'all') return;
    if (found === 'other') throw failure;
    try {
      await store.append(runId, batch, options.lease());
      return;
    } catch (error) {
      // A conflict now may be the first commit, found late: asked about like a transient error.
      const late = StepwiseError.isInstance(error) && error.code === ErrorCodes.JOURNAL_CONFLICT;
      if (!isTransient(error) && !late) throw error;
    }
  }
}
