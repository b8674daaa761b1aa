import type { RunHandle } from '@stepwise/core';

/**
 * The runs going on in this process that the dashboard can cancel: those it resumed itself and
 * those the host tracked. A run leaves when its result settles.
 */
export class RunRegistry {
  readonly #handles = new Map<string, RunHandle>();
  readonly #settling = new Set<Promise<unknown>>();

  track(handle: RunHandle): RunHandle {
    this.#handles.set(handle.runId, handle);
    const settled = handle.result
      .catch(() => undefined)
      .finally(() => {
        if (this.#handles.get(handle.runId) === handle) this.#handles.delete(handle.runId);
        this.#settling.delete(settled);
      });
    this.#settling.add(settled);
    return handle;
  }

  get(runId: string): RunHandle | undefined {
    return this.#handles.get(runId);
  }

  /** Waits for every tracked run to end. */
  async settled(): Promise<void> {
    while (this.#settling.size > 0) await Promise.allSettled([...this.#settling]);
  }
}
