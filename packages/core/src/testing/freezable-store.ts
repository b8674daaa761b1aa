import type { RunEvent } from '../journal/events.js';
import type { Lease, RunFilter, RunStore } from '../journal/run-store.js';

const never = <T>() => new Promise<T>(() => undefined);

/**
 * Wraps a store; `freeze()` makes every later write and lease call hang forever, which is what a
 * process that died, or a worker cut off from its database, looks like from the outside: its
 * journal stops mid-way and its lease stops being renewed. Reads still answer. A second engine
 * then carries on from `inner`, as another process would. `close()` leaves `inner` open: it
 * belongs to the test.
 */
export class FreezableStore implements RunStore {
  #frozen = false;

  constructor(readonly inner: RunStore) {}

  get frozen(): boolean {
    return this.#frozen;
  }

  freeze(): void {
    this.#frozen = true;
  }

  append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    return this.#frozen ? never() : this.inner.append(runId, events, lease);
  }

  read(runId: string, afterSeq?: number): AsyncIterable<RunEvent> {
    return this.inner.read(runId, afterSeq);
  }

  getRun(runId: string) {
    return this.inner.getRun(runId);
  }

  listRuns(filter?: RunFilter) {
    return this.inner.listRuns(filter);
  }

  getExecution(executionId: string) {
    return this.inner.getExecution(executionId);
  }

  acquireLease(runId: string, owner: string, ttlMs: number) {
    return this.#frozen ? never<Lease | undefined>() : this.inner.acquireLease(runId, owner, ttlMs);
  }

  renewLease(lease: Lease) {
    return this.#frozen ? never<Lease>() : this.inner.renewLease(lease);
  }

  releaseLease(lease: Lease) {
    return this.#frozen ? never<void>() : this.inner.releaseLease(lease);
  }

  async close(): Promise<void> {}
}
