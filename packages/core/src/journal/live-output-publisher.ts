import type { ToolOutputEvent } from './live-output.js';
import type { LiveOutputTail, RunStore } from './run-store.js';

/** Characters of a call's stream kept in the store: the end of its output, as a terminal shows it. */
export const LIVE_OUTPUT_TAIL_CHARS = 65_536;
/** At most one write per call and stream this often (ms): output that comes faster is coalesced. */
export const LIVE_OUTPUT_PUBLISH_MS = 500;

interface Tail {
  readonly stepId: string;
  readonly executionId: string;
  readonly stream: 'stdout' | 'stderr';
  text: string;
  total: number;
  /** Changed since the last write. */
  dirty: boolean;
  /** Epoch ms of the last write (0: none yet). */
  writtenAt: number;
}

type LiveStore = Required<Pick<RunStore, 'writeLiveOutput' | 'clearLiveOutput'>>;

/**
 * Publishes a run's live output (what `handle.onLive` listeners get: redacted) to a store that keeps
 * it (`RunStore.writeLiveOutput`), so another process — a dashboard — shows a running command's
 * output. Bounded (`LIVE_OUTPUT_TAIL_CHARS` per call and stream), throttled (one write per call and
 * stream every `LIVE_OUTPUT_PUBLISH_MS` at most, coalesced), cleared when the call ends. A write the
 * store refuses is dropped: live output is never worth failing a run for.
 */
export class LiveOutputPublisher {
  readonly #runId: string;
  readonly #store: LiveStore;
  readonly #tails = new Map<string, Tail>();
  /** Calls that published something: they are cleared when they end. */
  readonly #published = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  /** Writes in flight, in order per run: a clear never overtakes the write before it. */
  #chain: Promise<void> = Promise.resolve();

  constructor(runId: string, store: LiveStore) {
    this.#runId = runId;
    this.#store = store;
  }

  /** A piece of a call's output, as listeners got it. */
  add(event: ToolOutputEvent): void {
    const key = `${event.executionId}\0${event.stream}`;
    let tail = this.#tails.get(key);
    if (!tail) {
      tail = {
        stepId: event.stepId,
        executionId: event.executionId,
        stream: event.stream,
        text: '',
        total: 0,
        dirty: false,
        writtenAt: 0,
      };
      this.#tails.set(key, tail);
    }
    tail.text = (tail.text + event.text).slice(-LIVE_OUTPUT_TAIL_CHARS);
    tail.total += event.text.length;
    tail.dirty = true;
    this.#timer ??= setInterval(() => this.#flush(false), LIVE_OUTPUT_PUBLISH_MS / 5).unref();
  }

  /** The call returned: its output is in its result now, so its tails leave the store. */
  end(executionId: string): void {
    for (const stream of ['stdout', 'stderr']) this.#tails.delete(`${executionId}\0${stream}`);
    if (this.#tails.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
    if (!this.#published.delete(executionId)) return;
    this.#enqueue(() => this.#store.clearLiveOutput(this.#runId, executionId));
  }

  #flush(force: boolean): void {
    const now = Date.now();
    for (const tail of this.#tails.values()) {
      if (!tail.dirty || (!force && now - tail.writtenAt < LIVE_OUTPUT_PUBLISH_MS)) continue;
      tail.dirty = false;
      tail.writtenAt = now;
      this.#published.add(tail.executionId);
      const written: LiveOutputTail = {
        runId: this.#runId,
        stepId: tail.stepId,
        executionId: tail.executionId,
        stream: tail.stream,
        text: tail.text,
        total: tail.total,
        at: new Date(now).toISOString(),
      };
      this.#enqueue(() => this.#store.writeLiveOutput(written));
    }
  }

  #enqueue(write: () => Promise<void>): void {
    this.#chain = this.#chain.then(write).catch(() => undefined);
  }
}

/** A publisher for the run when the store keeps live output and the engine did not opt out. */
export function livePublisherFor(
  runId: string,
  store: RunStore,
  enabled: boolean | undefined,
): LiveOutputPublisher | undefined {
  if (enabled === false || !store.writeLiveOutput || !store.clearLiveOutput) return undefined;
  return new LiveOutputPublisher(runId, store as unknown as LiveStore);
}
