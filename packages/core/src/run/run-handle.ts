import type { RunEvent, RunResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import type { LiveListener } from '../journal/live-output.js';
import type { RunStore } from '../journal/run-store.js';

/** A running plan: iterate its events, await its result, or cancel it. */
export interface RunHandle extends AsyncIterable<RunEvent> {
  readonly runId: string;
  readonly result: Promise<RunResult>;
  cancel(reason?: string): void;
  /**
   * Listens to what the run shows while it happens and does not journal — `tool-output` (a running
   * command's stdout and stderr) and `model-delta` (a model's answer as it streams) — in this
   * process, from now on. Returns the removal. See `LiveEvent`.
   */
  onLive(listener: LiveListener): () => void;
}

/** Subscribes once the journal exists; a removal before then cancels the subscription. */
function liveOf(journal: RunJournal | RunHandle | Promise<RunJournal | RunHandle | undefined> | undefined) {
  const subscribe = (resolved: RunJournal | RunHandle, listener: LiveListener) =>
    'onLive' in resolved ? resolved.onLive(listener) : resolved.live.subscribe(listener);
  return (listener: LiveListener): (() => void) => {
    if (journal !== undefined && !('then' in journal)) return subscribe(journal, listener);
    let removed = false;
    let remove: () => void = () => {
      removed = true;
    };
    Promise.resolve(journal).then(
      (resolved) => {
        if (!removed && resolved) remove = subscribe(resolved, listener);
      },
      () => undefined,
    );
    return () => remove();
  };
}

/**
 * Builds a handle whose iterators replay the journal from the store and then follow live
 * events, so a late iterator misses nothing and nothing is buffered when nobody iterates.
 */
export function createRunHandle(options: {
  readonly runId: string;
  /** The run's journal, or a promise of it (engines that take the lease asynchronously). */
  readonly journal: RunJournal | Promise<RunJournal | undefined>;
  readonly store: RunStore;
  readonly result: Promise<RunResult>;
  readonly cancel: (reason?: string) => void;
}): RunHandle {
  const { runId, journal, store, result } = options;
  // The iterator stops after run-end; a run that dies without one stops when result settles.
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  return {
    runId,
    result,
    cancel: options.cancel,
    onLive: liveOf(journal),
    async *[Symbol.asyncIterator]() {
      const live: RunEvent[] = [];
      let wake: (() => void) | undefined;
      // A run rejected before it had a journal has no events: the iterator ends at once.
      const resolved = await Promise.resolve(journal).catch(() => undefined);
      const unsubscribe =
        resolved?.subscribe((event) => {
          live.push(event);
          wake?.();
        }) ?? (() => undefined);
      let done = false;
      settled.then(() => {
        done = true;
        wake?.();
      });
      let lastSeq = 0;
      try {
        // A continued run has an earlier `run-end` followed by `run-continue`: only a last one ends it.
        let ended = false;
        for await (const event of store.read(runId)) {
          if (event.seq <= lastSeq) continue;
          lastSeq = event.seq;
          yield event;
          ended = event.type === 'run-end';
        }
        if (ended) return;
        while (true) {
          const event = live.shift();
          if (event) {
            if (event.seq <= lastSeq) continue;
            lastSeq = event.seq;
            yield event;
            if (event.type === 'run-end') return;
            continue;
          }
          if (done) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        unsubscribe();
      }
    },
  };
}

/**
 * A handle returned before the run's journal exists: `run()` returns at once, while taking the
 * lease and journaling `run-start` are asynchronous. Iterators wait for the journal, then behave
 * as `createRunHandle`'s; a run that never started (rejected journal) rejects iteration with the
 * same error as `result`, and one with no live session (`undefined`: it had already ended) reads the recorded journal.
 * Shared with @stepwise/engine-sequential; not part of the public API.
 * @internal
 */
export function createLazyRunHandle<Extra extends object = object>(
  options: {
    readonly runId: string;
    readonly store: RunStore;
    /** The session's journal, or the live handle of the session it is waiting for. */
    readonly journal: Promise<RunJournal | RunHandle | undefined>;
    readonly result: Promise<RunResult>;
    readonly cancel: (reason?: string) => void;
  },
  extra?: Extra,
): RunHandle & Extra {
  // Marked handled here; callers awaiting `result` still see the rejection.
  options.result.catch(ignore);
  options.journal.catch(ignore);
  const handle = new LazyRunHandle(options.runId, options.store, options.journal, options.result, options.cancel);
  return (extra ? Object.assign(handle, extra) : handle) as LazyRunHandle & Extra;
}

const ignore = () => undefined;

/**
 * A class, not an object literal: every run makes a handle, and a literal's iterator method and
 * `onLive` closure were built for each one whether or not anybody iterated or listened. `onLive`
 * is bound on first read, so `const { onLive } = handle` still works.
 */
class LazyRunHandle implements RunHandle {
  readonly runId: string;
  readonly result: Promise<RunResult>;
  readonly cancel: (reason?: string) => void;
  readonly #store: RunStore;
  readonly #journal: Promise<RunJournal | RunHandle | undefined>;
  #onLive: RunHandle['onLive'] | undefined;

  constructor(
    runId: string,
    store: RunStore,
    journal: Promise<RunJournal | RunHandle | undefined>,
    result: Promise<RunResult>,
    cancel: (reason?: string) => void,
  ) {
    this.runId = runId;
    this.result = result;
    this.cancel = cancel;
    this.#store = store;
    this.#journal = journal;
  }

  get onLive(): RunHandle['onLive'] {
    this.#onLive ??= liveOf(this.#journal);
    return this.#onLive;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    const { runId, result, cancel } = this;
    const store = this.#store;
    // A run that never started (lease held elsewhere, store refused) throws its typed error here too.
    const journal = await this.#journal;
    if (!journal) {
      yield* store.read(runId);
      return;
    }
    if (Symbol.asyncIterator in journal) {
      yield* journal;
      return;
    }
    yield* createRunHandle({ runId, store, journal, result, cancel });
  }
}
