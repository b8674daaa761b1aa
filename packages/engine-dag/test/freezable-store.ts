import type { RunEvent, RunFilter, RunStore } from '@stepwise/core';
import type { Lease } from '@stepwise/core/store';

const never = <T>() => new Promise<T>(() => undefined);

/**
 * Wraps a store; `freeze()` makes every later write hang forever, which is what a process that
 * died looks like from the outside: its journal stops mid-way and its lease stops being renewed.
 * A second engine then resumes from `inner`, as a new process would.
 */
export class FreezableStore implements RunStore {
  frozen = false;

  constructor(readonly inner: RunStore) {}

  freeze(): void {
    this.frozen = true;
  }

  append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    return this.frozen ? never() : this.inner.append(runId, events, lease);
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
    return this.frozen ? never<Lease | undefined>() : this.inner.acquireLease(runId, owner, ttlMs);
  }

  renewLease(lease: Lease) {
    return this.frozen ? never<Lease>() : this.inner.renewLease(lease);
  }

  releaseLease(lease: Lease) {
    return this.frozen ? never<void>() : this.inner.releaseLease(lease);
  }

  async close(): Promise<void> {
    // The inner store belongs to the test.
  }
}
