/**
 * Int32Arrays a finished phase of validation no longer needs, for a later phase to write into
 * instead of allocating. A typed array that has lived through a few collections is freed only by
 * a full one, which validation rarely lasts long enough to see: at 200,000 steps, reusing the
 * topological sort's and the step-id table's arrays kept 5 MB off the peak.
 */
export class SpareInts {
  // Smallest first: each request takes the smallest array that holds it.
  private readonly arrays: Int32Array[] = [];

  /** Arrays the caller is done with (it must not read or write them again). */
  give(...arrays: Int32Array[]): void {
    this.arrays.push(...arrays);
    this.arrays.sort((a, b) => a.length - b.length);
  }

  /** A zeroed array of `length` numbers: part of a spare one when one is large enough, else a new one. */
  take(length: number): Int32Array {
    const at = this.arrays.findIndex((array) => array.length >= length);
    if (at === -1) return new Int32Array(length);
    const [array] = this.arrays.splice(at, 1);
    return (array as Int32Array).subarray(0, length).fill(0);
  }
}
