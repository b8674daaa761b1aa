import type { RunEvent } from '@stepwise/core';
import type { ToolCallEvent } from '@stepwise/core/store';

/** Batches up to this many events find a result's call by looking back; larger ones index their calls. */
const SCAN_BACK_MAX = 16;

/**
 * Finds the `tool-call` a batch's `tool-result` names among the events before it: the writer needs
 * its attempt (an execution id may derive from it), the fold cache whether it is there at all. A
 * small batch's result has its call just before it, and looking back costs nothing; a large one (a
 * batched fan-out's, calls first and results after) indexes its calls as they are walked, so the
 * lookups stay linear in the batch.
 */
export class BatchCalls {
  readonly #events: readonly RunEvent[];
  readonly #index: Map<string, ToolCallEvent> | undefined;

  constructor(events: readonly RunEvent[]) {
    this.#events = events;
    this.#index = events.length > SCAN_BACK_MAX ? new Map() : undefined;
  }

  /** Walks past `events[at]`: call for every event in order, before `callBefore` for the next. */
  pass(at: number): void {
    const event = this.#events[at] as RunEvent;
    if (event.type === 'tool-call') this.#index?.set(event.executionId, event);
  }

  /** The nearest `tool-call` of `executionId` before `events[at]`, if any. */
  callBefore(at: number, executionId: string): ToolCallEvent | undefined {
    if (this.#index) return this.#index.get(executionId);
    for (let back = at - 1; back >= 0; back--) {
      const event = this.#events[back] as RunEvent;
      if (event.type === 'tool-call' && event.executionId === executionId) return event;
    }
    return undefined;
  }
}
