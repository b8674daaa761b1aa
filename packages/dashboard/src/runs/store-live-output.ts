import type { LiveEvent, RunStore } from '@stepwise/core';

type ToolOutputEvent = Extract<LiveEvent, { type: 'tool-output' }>;

/**
 * The live output of a run another process runs, as that process published it to the store
 * (`RunStore.readLiveOutput`: the last 64 KiB of each running call's stream): turned into the
 * `tool-output` pieces a page appends, each piece only what came since the last look.
 */
export class StoreLiveOutput {
  /** Characters of each call's stream already sent, by `executionId\0stream`. */
  readonly #sent = new Map<string, number>();

  async since(store: RunStore, runId: string): Promise<ToolOutputEvent[]> {
    if (!store.readLiveOutput) return [];
    const pieces: ToolOutputEvent[] = [];
    for (const tail of await store.readLiveOutput(runId)) {
      const key = `${tail.executionId}\0${tail.stream}`;
      const fresh = tail.total - (this.#sent.get(key) ?? 0);
      if (fresh <= 0) continue;
      this.#sent.set(key, tail.total);
      // More than the tail holds came meanwhile: the tail is what there is.
      const text = fresh >= tail.text.length ? tail.text : tail.text.slice(tail.text.length - fresh);
      pieces.push({
        type: 'tool-output',
        runId,
        stepId: tail.stepId,
        executionId: tail.executionId,
        stream: tail.stream,
        text,
        at: Date.parse(tail.at),
      });
    }
    return pieces;
  }
}
