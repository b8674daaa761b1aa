import type { CancelRequest } from './run-store.js';

/** The cancel request a run's lease carried, once, and who waits to hear of it (see `RunJournal.onCancelRequest`). */
export class CancelRequestListeners {
  #request: CancelRequest | undefined;
  readonly #listeners = new Set<(request: CancelRequest) => void>();

  constructor(request: CancelRequest | undefined) {
    this.#request = request;
  }

  get request(): CancelRequest | undefined {
    return this.#request;
  }

  /** Adds a listener, called at once when a request is already known; returns its removal. */
  add(listener: (request: CancelRequest) => void): () => void {
    if (this.#request !== undefined) {
      listener(this.#request);
      return () => undefined;
    }
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** The first request is kept and delivered; later ones are the same run's cancel and change nothing. */
  deliver(request: CancelRequest): void {
    if (this.#request !== undefined) return;
    this.#request = request;
    for (const listener of this.#listeners) {
      try {
        listener(request);
      } catch {
        // As with event listeners: a listener's bug must not break the lease keeper.
      }
    }
    this.#listeners.clear();
  }
}

/** The reason a run cancelled through the store gives its steps (`cancelled: …` in their errors). */
export function cancelRequestReason(request: CancelRequest): string {
  return `${request.by} asked to cancel the run${request.reason ? `: ${request.reason}` : ''}`;
}
