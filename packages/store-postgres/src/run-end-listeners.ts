/**
 * Who in this process hears that a store (keyed by its connection) committed a run's `run-end` (and with it marked the run's
 * work-queue row done): a worker then has nothing left to record. Internal to the package, so the
 * store's public shape does not change.
 */
const listeners = new WeakMap<object, Set<(runId: string) => void>>();

/** Calls `listener` with each run whose `run-end` the store of `connection` commits from now on; returns the removal. */
export function onRunEndCommitted(connection: object, listener: (runId: string) => void): () => void {
  let set = listeners.get(connection);
  if (!set) {
    set = new Set();
    listeners.set(connection, set);
  }
  set.add(listener);
  return () => set.delete(listener);
}

export function runEndCommitted(connection: object, runId: string): void {
  const set = listeners.get(connection);
  if (set) for (const listener of set) listener(runId);
}
