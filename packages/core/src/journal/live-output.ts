import type { LiveOutputPublisher } from './live-output-publisher.js';
import type { Redactor } from './redact.js';
import { StreamRedactor } from './stream-redactor.js';

/** A chunk of a running tool's output (a command's stdout or stderr), redacted, as it arrives. */
export interface ToolOutputEvent {
  readonly type: 'tool-output';
  readonly runId: string;
  readonly stepId: string;
  readonly executionId: string;
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
  /** Epoch ms. */
  readonly at: number;
}

/** A piece of a model's answer while it streams, redacted. */
export interface ModelDeltaEvent {
  readonly type: 'model-delta';
  readonly runId: string;
  readonly stepId: string;
  readonly text: string;
  /** Epoch ms. */
  readonly at: number;
}

/**
 * What a run shows while it happens and does not journal: delivered to listeners of this process
 * only, never stored one by one (a tool's whole output and a model's whole answer are journaled
 * when they end, as always). Ephemeral: a listener added later sees only what comes after.
 */
export type LiveEvent = ToolOutputEvent | ModelDeltaEvent;

export type LiveListener = (event: LiveEvent) => void;

/** Live text streamed for one call, one stream, beyond which a marker says the rest is in the result. */
export const LIVE_OUTPUT_MAX_CHARS = 1_048_576;
/** How often held text is looked at again (ms). */
const TICK_MS = 100;
const TRUNCATED = '\n[live output truncated: the whole output is in the step result]\n';

interface OpenStream {
  readonly redactor: StreamRedactor;
  readonly stepId: string;
  readonly executionId: string;
  readonly kind: 'stdout' | 'stderr' | 'model';
  shown: number;
  truncated: boolean;
}

/**
 * A run's live channel. Costs nothing while nobody listens and no publisher (`LiveOutputPublisher`:
 * the store keeps a running command's output for other processes) is set: text written then is dropped at once.
 * Text is redacted with the run's redactor as a stream (see `StreamRedactor`), released in pieces
 * at most every 100 ms per stream, and capped per stream at `LIVE_OUTPUT_MAX_CHARS`.
 */
export class LiveOutput {
  readonly #runId: string;
  readonly #redactor: Redactor;
  readonly #listeners = new Set<LiveListener>();
  readonly #open = new Map<string, OpenStream>();
  #timer: NodeJS.Timeout | undefined;
  readonly #publisher: LiveOutputPublisher | undefined;

  constructor(runId: string, redactor: Redactor, publisher?: LiveOutputPublisher) {
    this.#runId = runId;
    this.#redactor = redactor;
    this.#publisher = publisher;
  }

  /** Adds a listener; returns its removal. A listener that throws is ignored. */
  subscribe(listener: LiveListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Whether anyone listens: a source that must do work to produce live text (a model's stream) asks first. */
  get listening(): boolean {
    return this.#listeners.size > 0;
  }

  /** A running call's output. */
  toolOutput(stepId: string, executionId: string, stream: 'stdout' | 'stderr', text: string): void {
    this.#write(`${executionId}\0${stream}`, stepId, executionId, stream, text);
  }

  /** A piece of a model's streamed answer in a goal step. */
  modelDelta(stepId: string, text: string): void {
    this.#write(`${stepId}\0model`, stepId, '', 'model', text);
  }

  /** Releases what a call's streams hold (its tool returned): before its `step-end` reaches anyone. */
  endExecution(executionId: string): void {
    if (this.#open.size === 0) return;
    this.#end(`${executionId}\0stdout`);
    this.#end(`${executionId}\0stderr`);
    this.#publisher?.end(executionId);
  }

  /** Releases what a goal step's model stream holds (the model's answer is complete). */
  endModel(stepId: string): void {
    this.#end(`${stepId}\0model`);
  }

  #write(key: string, stepId: string, executionId: string, kind: OpenStream['kind'], text: string): void {
    // A model's stream is published to no store: only a command's output (what a terminal would show).
    if ((this.#listeners.size === 0 && (!this.#publisher || kind === 'model')) || text.length === 0) return;
    let open = this.#open.get(key);
    if (!open) {
      const redactor = new StreamRedactor((value) => this.#redactor.redactText(value));
      open = { redactor, stepId, executionId, kind, shown: 0, truncated: false };
      this.#open.set(key, open);
    }
    if (open.truncated) return;
    open.redactor.write(text, Date.now());
    this.#timer ??= setInterval(() => this.#tick(), TICK_MS).unref();
  }

  #tick(): void {
    const now = Date.now();
    for (const open of this.#open.values()) if (open.redactor.holding) this.#deliver(open, open.redactor.take(now));
  }

  #end(key: string): void {
    const open = this.#open.get(key);
    if (!open) return;
    this.#open.delete(key);
    this.#deliver(open, open.redactor.take(Date.now(), true));
    if (this.#open.size === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #deliver(open: OpenStream, released: string): void {
    if (released.length === 0 || open.truncated) return;
    let text = released;
    if (open.shown + text.length > LIVE_OUTPUT_MAX_CHARS) {
      text = text.slice(0, Math.max(0, LIVE_OUTPUT_MAX_CHARS - open.shown)) + TRUNCATED;
      open.truncated = true;
    }
    open.shown += text.length;
    const at = Date.now();
    const event: LiveEvent =
      open.kind === 'model'
        ? { type: 'model-delta', runId: this.#runId, stepId: open.stepId, text, at }
        : {
            type: 'tool-output',
            runId: this.#runId,
            stepId: open.stepId,
            executionId: open.executionId,
            stream: open.kind,
            text,
            at,
          };
    if (event.type === 'tool-output') this.#publisher?.add(event);
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own: the run and the other listeners go on.
      }
    }
  }
}
