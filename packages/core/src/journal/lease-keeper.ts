import { ErrorCodes, messageOf, StepwiseError } from '../errors.js';
import type { CancelRequest, Lease, RunStore } from './run-store.js';

/**
 * Until when (local epoch ms) a lease the store just granted or renewed is surely held: the store's
 * `expiresAt` when its clock agrees with this machine's, kept between the TTL after the request was
 * sent (the store cannot have started the lease earlier) and the TTL after its answer arrived (nor
 * later). A store whose clock runs ahead therefore cannot make the lease look longer than it is by
 * more than the answer's travel time; a store slow to answer (a pool to wait for, migrations on
 * first use) does not shorten it.
 */
export function leaseDeadline(lease: Lease, sentAt: number, receivedAt = Date.now()): number {
  const expiresAt = Date.parse(lease.expiresAt);
  const earliest = sentAt + lease.ttlMs;
  if (Number.isNaN(expiresAt)) return earliest;
  return Math.min(Math.max(expiresAt, earliest), receivedAt + lease.ttlMs);
}

export interface LeaseKeeperOptions {
  readonly store: Pick<RunStore, 'renewLease'>;
  readonly lease: Lease;
  /** Until when (local epoch ms) the lease is held unrenewed (see `leaseDeadline`). Default: `leaseDeadline(lease, now)`. */
  readonly deadline?: number | undefined;
  /** Renew this often (ms). Default a third of the lease's TTL (at least 50 ms). */
  readonly renewEveryMs?: number | undefined;
  /** Called once, when the lease is lost (the store refused a renewal, or its time ran out first). */
  readonly onLost: (error: StepwiseError) => void;
  /** Called once, with the first renewal that carries a cancel request (`Lease.cancelRequest`). */
  readonly onCancelRequest?: (request: CancelRequest) => void;
}

/**
 * Keeps a run's lease: renews it every third of its TTL and declares it lost (E501, naming the run)
 * as soon as the store refuses a renewal or the lease's local deadline passes unrenewed. The deadline
 * is kept on this machine's clock (`leaseDeadline`), so it does not end later than the store's own
 * expiry: once it passes, another owner may hold the run, and nothing of this one may start. A store that is briefly away (a retryable error) is asked again at the next renewal
 * until the deadline. A renewal that carries a cancel request (`RunStore.requestCancel`) is
 * reported once: the renewal every third of the TTL is how a run learns another process asked.
 */
export class LeaseKeeper {
  readonly #store: Pick<RunStore, 'renewLease'>;
  readonly #onLost: (error: StepwiseError) => void;
  readonly #onCancelRequest: ((request: CancelRequest) => void) | undefined;
  #cancelSeen: boolean;
  #lease: Lease;
  #deadline: number;
  #lost: StepwiseError | undefined;
  #renewing = false;
  readonly #renewTimer: NodeJS.Timeout;
  #deadlineTimer: NodeJS.Timeout | undefined;

  constructor(options: LeaseKeeperOptions) {
    this.#store = options.store;
    this.#onLost = options.onLost;
    this.#onCancelRequest = options.onCancelRequest;
    // A request the acquisition already carried is the journal's to deliver (see RunJournal).
    this.#cancelSeen = options.lease.cancelRequest !== undefined;
    this.#lease = options.lease;
    this.#deadline = options.deadline ?? leaseDeadline(options.lease, Date.now());
    const every = options.renewEveryMs ?? Math.max(50, Math.floor(options.lease.ttlMs / 3));
    this.#renewTimer = setInterval(() => this.#tick(), every);
    this.#renewTimer.unref();
    this.#armDeadline();
  }

  get lease(): Lease {
    return this.#lease;
  }

  /** Why the lease is lost, checking its local deadline first; `undefined` while it is held. */
  check(): StepwiseError | undefined {
    if (this.#lost === undefined && Date.now() > this.#deadline) this.#expire();
    return this.#lost;
  }

  /** Stops renewing (the run ended, or its journal failed). */
  stop(): void {
    clearInterval(this.#renewTimer);
    if (this.#deadlineTimer) clearTimeout(this.#deadlineTimer);
  }

  #armDeadline(): void {
    if (this.#deadlineTimer) clearTimeout(this.#deadlineTimer);
    // +1: a timer may fire a millisecond early, and `check` compares strictly.
    this.#deadlineTimer = setTimeout(() => this.check(), Math.max(0, this.#deadline - Date.now() + 1));
    this.#deadlineTimer.unref();
  }

  #tick(): void {
    if (this.check() || this.#renewing) return;
    this.#renewing = true;
    this.#renew().finally(() => {
      this.#renewing = false;
    });
  }

  async #renew(): Promise<void> {
    const sentAt = Date.now();
    try {
      const renewed = await this.#store.renewLease(this.#lease);
      if (this.#lost) return;
      this.#lease = renewed;
      this.#deadline = leaseDeadline(renewed, sentAt);
      this.#armDeadline();
      if (renewed.cancelRequest && !this.#cancelSeen) {
        this.#cancelSeen = true;
        this.#onCancelRequest?.(renewed.cancelRequest);
      }
    } catch (error) {
      // Asked again at the next tick; the deadline still ends it if the store stays away.
      if (StepwiseError.isInstance(error) && error.retryable && error.code !== ErrorCodes.LEASE_CONFLICT) return;
      const reason = messageOf(error);
      this.#lose(`the store refused to renew it: ${reason}`, error);
    }
  }

  #expire(): void {
    const ttl = this.#lease.ttlMs;
    this.#lose(`it was not renewed within its ${ttl} ms time-to-live, so another owner may hold the run`);
  }

  #lose(why: string, cause?: unknown): void {
    if (this.#lost) return;
    const { runId } = this.#lease;
    this.#lost = new StepwiseError(ErrorCodes.LEASE_CONFLICT, `lost the lease on run ${runId}: ${why}`, {
      location: runId,
      ...(cause === undefined ? {} : { cause }),
    });
    this.stop();
    this.#onLost(this.#lost);
  }
}
