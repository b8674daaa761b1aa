import type { SpareInts } from './spare-ints.js';

/**
 * A growing list of 32-bit integers in one typed array: the per-reference lists of validation
 * (sources, targets, undecided queries) hold up to a few hundred thousand numbers, which as plain
 * arrays cost twice the memory and a copy at each growth that the garbage collector must trace.
 */
export class IntList {
  private items: Int32Array;
  length = 0;

  /** `spare`: where to take the first array from (see `SpareInts`). */
  constructor(capacity = 16, spare?: SpareInts) {
    this.items = spare ? spare.take(Math.max(1, capacity)) : new Int32Array(Math.max(1, capacity));
  }

  push(value: number): void {
    if (this.length === this.items.length) {
      const larger = new Int32Array(2 * this.items.length);
      larger.set(this.items);
      this.items = larger;
    }
    this.items[this.length++] = value;
  }

  /** The number pushed `index`-th (0 past the end). */
  at(index: number): number {
    return index < this.length ? (this.items[index] as number) : 0;
  }

  /** Is `value` among the numbers pushed from index `from` on? */
  includesFrom(from: number, value: number): boolean {
    for (let index = from; index < this.length; index++) if (this.items[index] === value) return true;
    return false;
  }

  /** The numbers pushed so far; a view that later pushes may leave behind (take it once done). */
  view(): Int32Array {
    return this.items.subarray(0, this.length);
  }
}
