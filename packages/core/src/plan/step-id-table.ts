/** Probes one insert or lookup may take before the table gives up its hashing for a Map. */
const MAX_PROBES = 64;

/**
 * Step ids to slots, for validation's lookups (`dependsOn`, references): an open-addressing hash
 * table in typed arrays, sized once, with the ids' characters copied side by side.
 *
 * A Map was the slowest part of validating large plans: it grows by rehashing (reading every key
 * string again) and compares a looked-up id with its key character by character, the key being a
 * string somewhere in the plan — at 200,000 steps each lookup was a cache miss. Here a lookup
 * reads the table and the compact copy of the characters, and a string reference (`"$id/…"`) is
 * looked up by range, without cutting the id out of it.
 *
 * The hash is seeded per table, and a probe sequence longer than MAX_PROBES (ids crafted to
 * collide) hands every id to a Map, so no input makes an operation cost more than MAX_PROBES.
 */
export class StepIdTable {
  /** Slot + 1 per bucket; 0 marks an empty bucket. */
  private readonly buckets: Int32Array;
  private readonly mask: number;
  private readonly seed = (Math.random() * 0x1_0000_0000) >>> 0;
  /**
   * The ids' characters one after another; slot s owns `chars[charStart[s] .. charStart[s + 1] - 1]`.
   * One byte per character until an id has one above 255 (ids are ASCII as a rule).
   */
  private chars: Uint8Array | Uint16Array;
  private readonly charStart: Int32Array;
  private count = 0;
  /** Set once hashing has given up (see the class comment), or the table's arrays were handed over (`release`). */
  private fallback: Map<string, number> | undefined;
  /** Set by `release`: where the ids are read from for the Map built on the next lookup. */
  private idOf: ((slot: number) => string) | undefined;

  /** `maxProbes` is lowered by tests to reach the Map. */
  constructor(
    capacity: number,
    private readonly maxProbes = MAX_PROBES,
  ) {
    // At most half full: linear probing stays short.
    const size = 2 ** Math.ceil(Math.log2(Math.max(2, 2 * capacity)));
    this.buckets = new Int32Array(size);
    this.mask = size - 1;
    this.chars = new Uint8Array(Math.max(16, 8 * capacity));
    this.charStart = new Int32Array(capacity + 1);
  }

  /** The slot of the step whose id is `text.slice(from, to)`, or -1. */
  slotOf(text: string, from = 0, to = text.length): number {
    if (this.idOf && !this.fallback) this.fallback = this.mapOf(this.idOf);
    if (this.fallback) return this.fallback.get(text.slice(from, to)) ?? -1;
    return this.probe(text, from, to, this.hash(text, from, to) & this.mask, 0);
  }

  /**
   * `slotOf` for every id in `lookups`, into `lookups.slots`. Each step of a lookup waits for the
   * memory read of the one before (the id's characters, its bucket, the characters it is compared
   * with), and at 200,000 steps most of those reads miss the cache. Here all the ids are hashed
   * and their buckets read, then all the candidates compared: the reads of one pass do not
   * wait for each other, so the processor has many under way at once (400,000 ids looked up in a
   * table of 200,000 took about 40% less time). Validation looks up the references' ids so; it
   * looks up `dependsOn` one at a time, since batches cost more than they saved on plans whose
   * steps share dependencies (a fan-out), where the reads hit the cache anyway.
   */
  slotsOf(lookups: IdLookups): void {
    const { texts, from, to, slots, length } = lookups;
    if (this.idOf && !this.fallback) this.fallback = this.mapOf(this.idOf);
    if (this.fallback) {
      for (let index = 0; index < length; index++)
        slots[index] = this.slotOf(texts[index] as string, from[index] as number, to[index] as number);
      return;
    }
    const { buckets, mask } = this;
    const at = lookups.buckets;
    // The bucket's entry is only stored here, not looked at: the next id is hashed while it is read.
    // An id repeated from the one before (steps that share a dependency) is not hashed again.
    let bucket = 0;
    for (let index = 0; index < length; index++) {
      const text = texts[index] as string;
      const start = from[index] as number;
      const end = to[index] as number;
      if (index === 0 || text !== texts[index - 1] || start !== from[index - 1] || end !== to[index - 1]) {
        bucket = this.hash(text, start, end) & mask;
      }
      at[index] = bucket;
      slots[index] = buckets[bucket] as number;
    }
    for (let index = 0; index < length; index++) {
      const entry = slots[index] as number;
      const text = texts[index] as string;
      const start = from[index] as number;
      const end = to[index] as number;
      if (entry === 0) slots[index] = -1;
      else if (this.matches(entry - 1, text, start, end)) slots[index] = entry - 1;
      else slots[index] = this.probe(text, start, end, ((at[index] as number) + 1) & mask, 1);
    }
  }

  /** Linear probing for `text.slice(from, to)` from bucket `at`, `probe` probes already taken. */
  private probe(text: string, from: number, to: number, at: number, probe: number): number {
    const { buckets, mask, maxProbes } = this;
    for (; probe < maxProbes; probe++, at = (at + 1) & mask) {
      const entry = buckets[at] as number;
      if (entry === 0) return -1;
      if (this.matches(entry - 1, text, from, to)) return entry - 1;
    }
    return -1;
  }

  /** The slot of `id`: the one it has, or else the next one, which it is given (one hash, one probe). */
  intern(id: string): number {
    if (this.fallback) {
      const known = this.fallback.get(id);
      if (known !== undefined) return known;
      this.fallback.set(id, this.count);
      return this.append(id);
    }
    const { buckets, mask, maxProbes } = this;
    const hash = this.hash(id, 0, id.length);
    for (let probe = 0, at = hash & mask; probe < maxProbes; probe++, at = (at + 1) & mask) {
      const entry = buckets[at] as number;
      if (entry === 0) {
        buckets[at] = this.count + 1;
        return this.append(id);
      }
      if (this.matches(entry - 1, id, 0, id.length)) return entry - 1;
    }
    // Not there (it would be within MAX_PROBES of its bucket), and no room within reach.
    const slot = this.append(id);
    this.giveUpHashing();
    return slot;
  }

  private append(id: string): number {
    const slot = this.count++;
    this.copyCharacters(slot, id);
    return slot;
  }

  private hash(text: string, from: number, to: number): number {
    let hash = this.seed ^ (to - from);
    for (let index = from; index < to; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
    // Mix the high bits into the low ones the mask keeps.
    hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
    hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
    return hash ^ (hash >>> 16);
  }

  private matches(slot: number, text: string, from: number, to: number): boolean {
    const { chars, charStart } = this;
    const start = charStart[slot] as number;
    if ((charStart[slot + 1] as number) - start !== to - from) return false;
    for (let index = 0; index < to - from; index++) {
      if (chars[start + index] !== text.charCodeAt(from + index)) return false;
    }
    return true;
  }

  private copyCharacters(slot: number, id: string): void {
    const start = this.charStart[slot] as number;
    let wide = this.chars instanceof Uint16Array;
    for (let index = 0; index < id.length && !wide; index++) wide = id.charCodeAt(index) > 0xff;
    if (start + id.length > this.chars.length || wide !== this.chars instanceof Uint16Array) {
      const length = Math.max(start + id.length, 2 * this.chars.length);
      const larger = wide ? new Uint16Array(length) : new Uint8Array(length);
      larger.set(this.chars.subarray(0, start));
      this.chars = larger;
    }
    for (let index = 0; index < id.length; index++) this.chars[start + index] = id.charCodeAt(index);
    this.charStart[slot + 1] = start + id.length;
  }

  /**
   * Hands the table's arrays over for other use (see `SpareInts`) once the bulk of the lookups is
   * done. A lookup after that (reporting a rejected plan) builds a Map from `idOf` first.
   */
  release(idOf: (slot: number) => string): Int32Array[] {
    this.idOf = idOf;
    const arrays = [this.buckets, this.charStart];
    if (this.chars.byteLength >= 4) arrays.push(new Int32Array(this.chars.buffer, 0, this.chars.byteLength >> 2));
    return arrays;
  }

  private giveUpHashing(): void {
    this.fallback = this.mapOf((slot) => {
      const start = this.charStart[slot] as number;
      return String.fromCharCode(...this.chars.subarray(start, this.charStart[slot + 1] as number));
    });
  }

  private mapOf(idOf: (slot: number) => string): Map<string, number> {
    const map = new Map<string, number>();
    for (let slot = 0; slot < this.count; slot++) map.set(idOf(slot), slot);
    return map;
  }
}

/**
 * Ids to look up together (`StepIdTable.slotsOf`): `add` each as `text.slice(from, to)`, then read
 * the answers from `slots` in the same order. Sized for `capacity` ids; it grows for more.
 */
export class IdLookups {
  readonly texts: string[] = [];
  from: Int32Array;
  to: Int32Array;
  /** The answers, once looked up: a slot, or -1. */
  slots: Int32Array;
  /** Each id's bucket, for the lookup's own use. */
  buckets: Int32Array;
  length = 0;

  constructor(capacity = 256) {
    this.from = new Int32Array(capacity);
    this.to = new Int32Array(capacity);
    this.slots = new Int32Array(capacity);
    this.buckets = new Int32Array(capacity);
  }

  add(text: string, from: number, to: number): void {
    const length = this.length;
    if (length === this.from.length) this.grow();
    this.texts[length] = text;
    this.from[length] = from;
    this.to[length] = to;
    this.length = length + 1;
  }

  /** Starts a new batch (the arrays are written over). */
  clear(): void {
    this.length = 0;
  }

  private grow(): void {
    const larger = (array: Int32Array) => {
      const copy = new Int32Array(2 * array.length);
      copy.set(array);
      return copy;
    };
    this.from = larger(this.from);
    this.to = larger(this.to);
    this.slots = new Int32Array(2 * this.slots.length);
    this.buckets = new Int32Array(2 * this.buckets.length);
  }
}
