import type { LiveEvent } from '@stepwise/core';

// Escape sequences (CSI, OSC, and two-character ones) and every other control character: a
// command's output must not move the cursor, retitle the terminal or hide text in the live view.
const TERMINAL_CONTROL =
  /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** How many characters of an unfinished line are kept. */
const MAX_PARTIAL = 4096;

interface Tail {
  lines: string[];
  partial: string;
}

/**
 * The last lines of each running step's live output (a command's stdout and stderr together, a
 * model's streamed answer), cleaned of terminal control: what the live view shows under the step.
 * A carriage return starts the line over, as a progress bar means it.
 */
export class OutputTails {
  readonly #tails = new Map<string, Tail>();
  readonly #keep: number;

  constructor(keep = 2) {
    this.#keep = keep;
  }

  add(event: LiveEvent): void {
    let tail = this.#tails.get(event.stepId);
    if (!tail) {
      tail = { lines: [], partial: '' };
      this.#tails.set(event.stepId, tail);
    }
    const pieces = event.text.split('\n');
    tail.partial += pieces[0] ?? '';
    for (const piece of pieces.slice(1)) {
      this.#push(tail, tail.partial);
      tail.partial = piece;
    }
    if (tail.partial.length > MAX_PARTIAL) tail.partial = tail.partial.slice(-MAX_PARTIAL);
  }

  /** The lines to show for a step, oldest first (the unfinished line last). */
  lines(stepId: string): string[] {
    const tail = this.#tails.get(stepId);
    if (!tail) return [];
    const partial = clean(tail.partial);
    const all = partial ? [...tail.lines, partial] : tail.lines;
    return all.slice(-this.#keep);
  }

  /** Forgets a step's output (it ended, or starts a new attempt). */
  clear(stepId: string): void {
    this.#tails.delete(stepId);
  }

  #push(tail: Tail, line: string): void {
    const shown = clean(line);
    if (!shown) return;
    tail.lines.push(shown);
    if (tail.lines.length > this.#keep) tail.lines.shift();
  }
}

function clean(line: string): string {
  const overwritten = line.slice(line.lastIndexOf('\r') + 1);
  return overwritten.replace(TERMINAL_CONTROL, '').replace(/\t/g, '  ').trimEnd();
}
