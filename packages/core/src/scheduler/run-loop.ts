import type { StepResult } from '../journal/events.js';
import type { RunJournal } from '../journal/journal.js';
import type { ToolCatalog } from '../tools/tool-registry.js';
import type { EnginePolicy } from './engine-policy.js';
import { type ReadyEntry, ReadyQueue } from './ready-queue.js';
import type { SessionControl } from './session-control.js';
import type { Slot, StepBoard } from './step-board.js';
import type { StepObserver } from './step-observer.js';

/** A step waiting for a free slot, with the attempt it will start. */
export interface Queued extends ReadyEntry {
  readonly slot: Slot;
  readonly attempt: number;
}

/** What the loop needs: the session's board and state, the policy's limits, and who runs an attempt. */
export interface RunLoopParts {
  readonly board: StepBoard;
  readonly journal: Pick<RunJournal, 'lastSeq' | 'flush'>;
  readonly control: SessionControl;
  readonly observer: StepObserver;
  readonly policy: Pick<EnginePolicy, 'concurrency' | 'toolConcurrency'>;
  /** Resolves a tool's alias to its canonical name, so a per-tool limit counts every name of the tool. */
  readonly tools: Pick<ToolCatalog, 'get'>;
  /** Runs a taken attempt in its slot and frees the slot (`free`) once the attempt is over. */
  readonly run: (queued: Queued) => Promise<void>;
}

/**
 * The scheduling loop: which step starts next. A released step is `blocked` until its
 * dependencies let it run, then queued; queued attempts start as slots free, lowest plan index
 * first (so concurrency 1 is array order), under the global and per-tool limits. When a step's
 * result is final, the graph advances: dependents are queued, or skipped (E310).
 */
export class RunLoop {
  readonly #parts: RunLoopParts;
  readonly #ready: ReadyQueue<Queued>;
  #pumping = false;
  /** Exclusive sections (revisions) in progress: no step starts meanwhile. */
  #exclusive = 0;
  #chain: Promise<unknown> = Promise.resolve();
  /** Steps that ended while a revision was being written: they advance once it is adopted. */
  readonly #endedDuringRevision: [Slot, StepResult][] = [];

  /** Whether the policy limits any tool: without limits no entry needs a tool's name looked up. */
  readonly #toolLimits: boolean;

  constructor(parts: RunLoopParts) {
    this.#parts = parts;
    this.#ready = new ReadyQueue(parts.policy.concurrency);
    this.#toolLimits = Object.keys(parts.policy.toolConcurrency).length > 0;
  }

  /** Marks a step blocked, or enqueues it when nothing holds it back. */
  release(slot: Slot): void {
    if (slot.result) return;
    if (slot.remaining === 0) this.enqueue(slot, slot.attempt + 1);
    else slot.status = 'blocked';
  }

  enqueue(slot: Slot, attempt: number): void {
    slot.status = 'ready';
    this.#ready.push(this.#entry(slot, attempt));
    this.pump();
  }

  /** The attempt's slot is free again: the next queued attempt may take it. */
  free(queued: Queued): void {
    this.#ready.release(queued);
    this.pump();
  }

  /** Starts queued attempts while slots are free. Re-entrant calls (a step ending synchronously) leave it to the outer loop. */
  pump(): void {
    if (this.#pumping) return;
    const { control, run } = this.#parts;
    this.#pumping = true;
    try {
      while (!control.stopped && this.#exclusive === 0 && !control.held) {
        const queued = this.#ready.take();
        if (!queued) break;
        control.track(run(queued));
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Runs `work` after every earlier exclusive section; no step starts, and no ended step advances, until it is done. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(async () => {
      this.#exclusive++;
      try {
        return await work();
      } finally {
        this.#exclusive--;
        if (this.#exclusive === 0) {
          for (const [slot, result] of this.#endedDuringRevision.splice(0)) this.advance(slot, result);
        }
        this.pump();
      }
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /** A final result: the board takes it and the graph moves (dependents are queued, or skipped). */
  advance(slot: Slot, result: StepResult): void {
    if (slot.result) return;
    const { board, journal, control } = this.#parts;
    slot.endSeq = journal.lastSeq;
    // A revision checked the board before writing plan-revise: a step ending meanwhile must not
    // move the graph (release or skip dependents the revision is replacing) until it is adopted.
    if (this.#exclusive > 0) {
      this.#endedDuringRevision.push([slot, result]);
      return;
    }
    const ready = board.end(slot, result);
    this.#parts.observer.ended(slot);
    if (control.stopped) return;
    if (ready) {
      for (const target of ready) this.enqueue(target, target.attempt + 1);
    } else if (board.skipDependents(slot)) {
      control.track(journal.flush());
    }
  }

  /**
   * The queue entry of an attempt, with the policy's limit for the step's tool, counted under the
   * canonical name (the limit may name an alias). One literal per branch, no spread: once per step.
   */
  #entry(slot: Slot, attempt: number): Queued {
    const tool = slot.step.tool;
    if (tool !== undefined && this.#toolLimits) {
      const limits = this.#parts.policy.toolConcurrency;
      const canonical = this.#parts.tools.get(tool)?.name ?? tool;
      const limit = limits[tool] ?? limits[canonical];
      if (limit !== undefined) return { index: slot.index, tool: canonical, toolLimit: limit, slot, attempt };
    }
    return { index: slot.index, tool: undefined, toolLimit: 0, slot, attempt };
  }
}
