import type { LiveEvent } from '@stepwise/core';

/** What a page may ask for again (a page opened mid-step sees the output so far): per run. */
const MAX_EVENTS = 2000;
const MAX_CHARS = 512 * 1024;

interface RunOutput {
  readonly events: { readonly id: number; readonly event: LiveEvent }[];
  chars: number;
  nextId: number;
}

/**
 * The live output of the runs going on in this process (a command's stdout and stderr, a model's
 * answer as it streams), kept for the pages that follow them: bounded per run, the oldest dropped
 * first, forgotten when the run ends (its journal then holds the whole output).
 */
export class LiveBuffer {
  readonly #runs = new Map<string, RunOutput>();

  push(event: LiveEvent): void {
    let run = this.#runs.get(event.runId);
    if (!run) {
      run = { events: [], chars: 0, nextId: 1 };
      this.#runs.set(event.runId, run);
    }
    run.events.push({ id: run.nextId++, event });
    run.chars += event.text.length;
    while (run.events.length > MAX_EVENTS || (run.chars > MAX_CHARS && run.events.length > 1)) {
      run.chars -= (run.events.shift() as { event: LiveEvent }).event.text.length;
    }
  }

  /** Events after `afterId`, and the id to ask after next time. */
  since(runId: string, afterId: number): { readonly events: readonly LiveEvent[]; readonly last: number } {
    const run = this.#runs.get(runId);
    if (!run) return { events: [], last: afterId };
    const fresh = run.events.filter((entry) => entry.id > afterId);
    return { events: fresh.map((entry) => entry.event), last: fresh.at(-1)?.id ?? afterId };
  }

  forget(runId: string): void {
    this.#runs.delete(runId);
  }
}
