import type { RunHandle } from '@stepwise/core';
import { LiveBuffer } from './live-buffer.js';

/**
 * The runs going on in this process that the dashboard can cancel and whose live output it shows:
 * those it resumed itself and those the host tracked. A run leaves when its result settles.
 */
export class RunRegistry {
  readonly live = new LiveBuffer();
  readonly #handles = new Map<string, RunHandle>();
  readonly #settling = new Set<Promise<unknown>>();

  track(handle: RunHandle): RunHandle {
    this.#handles.set(handle.runId, handle);
    // A handle made by hand (not by an engine) may have no live channel.
    const stopListening =
      typeof handle.onLive === 'function' ? handle.onLive((event) => this.live.push(event)) : () => undefined;
    const settled = handle.result
      .catch(() => undefined)
      .finally(() => {
        stopListening();
        if (this.#handles.get(handle.runId) === handle) {
          this.#handles.delete(handle.runId);
          this.live.forget(handle.runId);
        }
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
