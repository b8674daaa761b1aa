/**
 * Holds the scheduler before each step until the host asks for one (`grant`), lets everything
 * through once the host runs the rest (`open`), and never holds a run that is stopping (`open`
 * again on cancel).
 */
export class StepGate {
  #free = false;
  #permits = 0;
  #wake: (() => void) | undefined;

  /** One more step may start. */
  grant(): void {
    this.#permits++;
    this.#wake?.();
  }

  /** Every remaining step may start. */
  open(): void {
    this.#free = true;
    this.#wake?.();
  }

  /** `undefined` when the step may start at once, else a promise that settles when it may. */
  pass(): Promise<void> | undefined {
    if (this.#free) return undefined;
    if (this.#permits > 0) {
      this.#permits--;
      return undefined;
    }
    return this.#wait();
  }

  async #wait(): Promise<void> {
    while (!this.#free && this.#permits === 0) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
    if (!this.#free) this.#permits--;
  }
}
