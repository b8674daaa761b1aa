import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { Lease, RunEvent, RunFilter, RunStore } from '@stepwise/core';
import { MemoryStore } from '@stepwise/core';

/**
 * A durable store for tests that must survive SIGKILL while the SQLite store is not built:
 * every acknowledged batch is one fsync'ed append of JSON lines; reopening replays the file.
 * Leases live in memory only (a killed process's lease dies with it).
 */
export class JsonlFileStore implements RunStore {
  readonly #memory = new MemoryStore();
  readonly #descriptor: number;

  private constructor(readonly path: string) {
    this.#descriptor = openSync(path, 'a');
  }

  static async open(path: string): Promise<JsonlFileStore> {
    const store = new JsonlFileStore(path);
    if (!existsSync(path)) return store;
    const byRun = new Map<string, RunEvent[]>();
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (!line) continue;
      let event: RunEvent;
      try {
        event = JSON.parse(line) as RunEvent;
      } catch {
        break; // a line torn by the kill was never acknowledged
      }
      const events = byRun.get(event.runId) ?? [];
      events.push(event);
      byRun.set(event.runId, events);
    }
    for (const [runId, events] of byRun) await store.#memory.append(runId, events);
    return store;
  }

  async append(runId: string, events: readonly RunEvent[], lease?: Lease): Promise<void> {
    await this.#memory.append(runId, events, lease);
    if (events.length === 0) return;
    writeSync(this.#descriptor, events.map((event) => `${JSON.stringify(event)}\n`).join(''));
    fsyncSync(this.#descriptor);
  }

  read(runId: string, afterSeq?: number) {
    return this.#memory.read(runId, afterSeq);
  }
  getRun(runId: string) {
    return this.#memory.getRun(runId);
  }
  listRuns(filter?: RunFilter) {
    return this.#memory.listRuns(filter);
  }
  getExecution(executionId: string) {
    return this.#memory.getExecution(executionId);
  }
  acquireLease(runId: string, owner: string, ttlMs: number) {
    return this.#memory.acquireLease(runId, owner, ttlMs);
  }
  renewLease(lease: Lease) {
    return this.#memory.renewLease(lease);
  }
  releaseLease(lease: Lease) {
    return this.#memory.releaseLease(lease);
  }
  async close(): Promise<void> {
    await this.#memory.close();
    closeSync(this.#descriptor);
  }
}
