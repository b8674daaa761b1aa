import type { AncestryGraph } from './dependency-index.js';
import { IntList } from './int-list.js';
import type { SpareInts } from './spare-ints.js';

/** Targets one group answers: WORDS words of 32 bits per row. */
const WORDS = 4;
/**
 * A group is answered by bitsets when its rows × words are at most this many per query in it;
 * otherwise its queries are left to the searches. A row word is read and written in order, with
 * one read per dependency edge of a step that sits a few places back; a search's edge is a cache
 * miss somewhere in the plan.
 */
const ROW_WORDS_PER_QUERY = 32;

/**
 * Answers the queries whose source sits at most `nearSpan` places after its target in the
 * topological order, where they are dense enough, and returns the queries it leaves.
 *
 * The near queries are sorted by their target's position (counting sort: O(steps + queries)) and
 * cut into groups of up to WORDS × 32 distinct targets within `nearSpan` places of each other. A
 * group pushes one bit per target along the topological order from its first target to its last
 * source (a step's row is the OR of its dependencies' rows), so its cost is known before it runs:
 * at most (2 · nearSpan + 1) × WORDS words. A group that would cost more than ROW_WORDS_PER_QUERY
 * words per query is left to the searches. Random plans with dependencies and references within a
 * window (references 40 links back, steps depending on the 50 before them) cost a few dozen words
 * per reference here, where a search must cross the whole window: about 1,000 edges without
 * labels, and the labels cost four walks over the graph.
 */
export function answerNearQueries(
  graph: AncestryGraph,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  undecided: Int32Array,
  nearSpan: number,
  answers: Uint8Array,
  spare: SpareInts,
): { left: Int32Array; answered: number } {
  const { position } = graph;
  const left = new IntList(1024);
  const sorted = nearQueriesByTarget(graph, sources, targets, undecided, nearSpan, left, spare);
  if (sorted.length === 0) return { left: undecided, answered: 0 };
  const order = spare.take(position.length);
  for (let slot = 0; slot < position.length; slot++) order[position[slot] as number] = slot;
  const group: Group = { first: 0, end: 0, low: 0, high: 0, words: 0 };
  const bits = new Int32Array((2 * nearSpan + 1) * WORDS);
  let answered = 0;
  while (group.end < sorted.length) {
    nextGroup(position, sources, targets, sorted, nearSpan, group);
    const queries = group.end - group.first;
    if ((group.high - group.low + 1) * group.words <= ROW_WORDS_PER_QUERY * queries) {
      propagateGroup(graph, order, targets, sorted, group, bits);
      answerGroup(position, sources, targets, sorted, group, bits, answers);
      answered += queries;
    } else {
      for (let at = group.first; at < group.end; at++) left.push(sorted[at] as number);
    }
  }
  spare.give(order);
  return { left: left.view(), answered };
}

/** Queries `sorted[first .. end - 1]`, targets from position `low`, sources up to `high`, `words` per row. */
interface Group {
  first: number;
  end: number;
  low: number;
  high: number;
  words: number;
}

/** The near queries of `undecided`, by their target's position; the others go to `far`. */
function nearQueriesByTarget(
  graph: AncestryGraph,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  undecided: Int32Array,
  nearSpan: number,
  far: IntList,
  spare: SpareInts,
): Int32Array {
  const { position } = graph;
  // counts[p + 1]: near queries whose target is at position p; then where they start.
  const counts = spare.take(position.length + 1);
  let near = 0;
  for (let index = 0; index < undecided.length; index++) {
    const query = undecided[index] as number;
    const at = position[targets[query] as number] as number;
    if ((position[sources[query] as number] as number) - at > nearSpan) far.push(query);
    else {
      counts[at + 1] = (counts[at + 1] as number) + 1;
      near++;
    }
  }
  if (near === 0) {
    spare.give(counts);
    return new Int32Array(0);
  }
  for (let at = 0; at < position.length; at++) counts[at + 1] = (counts[at + 1] as number) + (counts[at] as number);
  // Not a spare: part of one would leave the rest of it unusable for the searches' larger arrays.
  const sorted = new Int32Array(near);
  for (let index = 0; index < undecided.length; index++) {
    const query = undecided[index] as number;
    const at = position[targets[query] as number] as number;
    if ((position[sources[query] as number] as number) - at > nearSpan) continue;
    sorted[counts[at] as number] = query;
    counts[at] = (counts[at] as number) + 1;
  }
  spare.give(counts);
  return sorted;
}

/** Moves `group` on to the next queries: up to WORDS × 32 distinct targets, none more than `nearSpan` after the first. */
function nextGroup(
  position: Int32Array,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  sorted: Int32Array,
  nearSpan: number,
  group: Group,
): void {
  group.first = group.end;
  group.low = position[targets[sorted[group.first] as number] as number] as number;
  group.high = group.low;
  let distinct = 0;
  let last = -1;
  let end = group.first;
  for (; end < sorted.length; end++) {
    const query = sorted[end] as number;
    const target = targets[query] as number;
    if (target !== last) {
      if (distinct === WORDS * 32 || (position[target] as number) > group.low + nearSpan) break;
      distinct++;
      last = target;
    }
    group.high = Math.max(group.high, position[sources[query] as number] as number);
  }
  group.end = end;
  group.words = Math.ceil(distinct / 32);
}

/** Each position's row from `low` to `high`: its own bit if it is a target of the group, OR its dependencies' rows. */
function propagateGroup(
  graph: AncestryGraph,
  order: Int32Array,
  targets: ArrayLike<number>,
  sorted: Int32Array,
  group: Group,
  bits: Int32Array,
): void {
  const { position } = graph;
  const { start, list } = graph.dependencies;
  const { low, high, words } = group;
  bits.fill(0, 0, (high - low + 1) * words);
  let next = group.first;
  let bit = 0;
  for (let at = low; at <= high; at++) {
    const slot = order[at] as number;
    const row = (at - low) * words;
    const end = start[slot + 1] as number;
    for (let edge = start[slot] as number; edge < end; edge++) {
      // A dependency before the first target is reached by none of them.
      const from = ((position[list[edge] as number] as number) - low) * words;
      if (from < 0) continue;
      for (let word = 0; word < words; word++)
        bits[row + word] = (bits[row + word] as number) | (bits[from + word] as number);
    }
    if (next < group.end && targets[sorted[next] as number] === slot) {
      bits[row + (bit >>> 5)] = (bits[row + (bit >>> 5)] as number) | (1 << (bit & 31));
      bit++;
      while (next < group.end && targets[sorted[next] as number] === slot) next++;
    }
  }
}

/** Reads each query's answer: its target's bit in its source's row (bits numbered as `propagateGroup` set them). */
function answerGroup(
  position: Int32Array,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  sorted: Int32Array,
  group: Group,
  bits: Int32Array,
  answers: Uint8Array,
): void {
  let bit = -1;
  let last = -1;
  for (let at = group.first; at < group.end; at++) {
    const query = sorted[at] as number;
    const target = targets[query] as number;
    if (target !== last) {
      bit++;
      last = target;
    }
    const row = ((position[sources[query] as number] as number) - group.low) * group.words;
    answers[query] = ((bits[row + (bit >>> 5)] as number) >>> (bit & 31)) & 1;
  }
}
