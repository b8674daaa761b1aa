/**
 * The steps that may start, in plan order, and the slots they may start in: a global limit and
 * optional per-tool limits. It is pull-based on purpose: a step costs one array entry until a slot
 * frees, never a promise or a queued job, so a 100,000-step fan-out stays a flat array and the
 * cost per step does not grow with the number of steps waiting.
 */
export interface ReadyEntry {
  /** Plan order: lower starts first. */
  readonly index: number;
  /** The tool whose limit this entry counts against; `undefined` for none. */
  readonly tool: string | undefined;
  /** That tool's limit. */
  readonly toolLimit: number;
}

export class ReadyQueue<Entry extends ReadyEntry> {
  readonly #heap: Entry[] = [];
  /** Entries whose tool was full when their turn came; they go back to the heap as the tool frees. */
  readonly #parked = new Map<string, Entry[]>();
  readonly #toolActive = new Map<string, number>();
  #active = 0;

  constructor(readonly concurrency: number) {}

  get active(): number {
    return this.#active;
  }

  push(entry: Entry): void {
    heapPush(this.#heap, entry);
  }

  /**
   * The next entry that may start now, counted as active; `undefined` when the global limit is
   * reached or nothing is ready. Entries whose tool is full are parked, keeping their order.
   */
  take(): Entry | undefined {
    while (this.#active < this.concurrency) {
      const entry = heapPop(this.#heap);
      if (!entry) return undefined;
      if (entry.tool !== undefined && !this.#claimTool(entry.tool, entry.toolLimit)) {
        heapPush(this.#parkedFor(entry.tool), entry);
        continue;
      }
      this.#active++;
      return entry;
    }
    return undefined;
  }

  /** The entry's attempt ended: its slots free and the first entry parked on its tool is ready again. */
  release(entry: Entry): void {
    this.#active--;
    if (entry.tool === undefined) return;
    this.#toolActive.set(entry.tool, (this.#toolActive.get(entry.tool) ?? 1) - 1);
    const parked = this.#parked.get(entry.tool);
    const next = parked && heapPop(parked);
    if (next) heapPush(this.#heap, next);
  }

  #claimTool(tool: string, limit: number): boolean {
    const active = this.#toolActive.get(tool) ?? 0;
    if (active >= limit) return false;
    this.#toolActive.set(tool, active + 1);
    return true;
  }

  #parkedFor(tool: string): Entry[] {
    let parked = this.#parked.get(tool);
    if (!parked) {
      parked = [];
      this.#parked.set(tool, parked);
    }
    return parked;
  }
}

// A binary min-heap on `index`: O(log n) per step, where a sorted insert into a 100k array is O(n).
function heapPush<Entry extends ReadyEntry>(heap: Entry[], entry: Entry): void {
  let at = heap.length;
  heap.push(entry);
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if ((heap[parent] as Entry).index <= entry.index) break;
    heap[at] = heap[parent] as Entry;
    at = parent;
  }
  heap[at] = entry;
}

function heapPop<Entry extends ReadyEntry>(heap: Entry[]): Entry | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  let at = 0;
  for (;;) {
    const left = 2 * at + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && (heap[right] as Entry).index < (heap[left] as Entry).index ? right : left;
    if ((heap[child] as Entry).index >= last.index) break;
    heap[at] = heap[child] as Entry;
    at = child;
  }
  heap[at] = last;
  return top;
}
