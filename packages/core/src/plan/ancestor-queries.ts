import type { TopologicalOrder } from './dependency-index.js';

/** An acyclic dependency graph with its topological order (see `topologicalOrder`). */
export interface AncestryGraph extends TopologicalOrder {
  readonly order: readonly number[];
  readonly dependencies: readonly (readonly number[])[];
}

/** Targets answered per pass of the bitset propagation: 64 words of 32 bits per step. */
const WORDS_PER_PASS = 64;

/**
 * For each query q, is `targets[q]` a (transitive) dependency of `sources[q]`? Answers 1 or 0.
 *
 * Cost, with N steps, E edges and R queries: O(N + E + R) for every query that is a direct
 * dependency, that fails the topological-position test, or whose target is an ancestor along
 * one depth-first spanning forest (chains, trees, fan-out/fan-in, references to a shared
 * setup step — the plans people and models write). The queries left over are answered
 * together by propagating bitsets along the topological order, 2,048 targets per pass: each
 * pass walks only the window from its first target to its last source, so the total is
 * O((N + E) · ⌈T / 32⌉) word operations at worst, T being the number of distinct targets left
 * over. Exact reachability for arbitrary pairs has no known linear algorithm; this keeps the
 * common shapes linear and the rest 32× (and by windowing, usually far more) below one search
 * per query.
 */
export function answerAncestorQueries(
  graph: AncestryGraph,
  sources: readonly number[],
  targets: readonly number[],
): Uint8Array {
  const answers = new Uint8Array(sources.length);
  const { position, dependencies } = graph;
  const undecided: number[] = [];
  // marked[slot] === source + 1 ⇔ slot is a direct dependency of `source`.
  const marked = new Int32Array(position.length);
  let markedFor = -1;
  for (let query = 0; query < sources.length; query++) {
    const source = sources[query] as number;
    const target = targets[query] as number;
    if ((position[target] as number) >= (position[source] as number)) continue;
    if (source !== markedFor) {
      for (const dependency of dependencies[source] as readonly number[]) marked[dependency] = source + 1;
      markedFor = source;
    }
    if (marked[target] === source + 1) answers[query] = 1;
    else undecided.push(query);
  }
  if (undecided.length === 0) return answers;

  const forest = spanningForest(graph);
  const leftOver: number[] = [];
  for (const query of undecided) {
    const source = sources[query] as number;
    const target = targets[query] as number;
    const entered = forest.enter[source] as number;
    if ((forest.enter[target] as number) <= entered && entered <= (forest.last[target] as number)) {
      answers[query] = 1;
    } else {
      leftOver.push(query);
    }
  }
  if (leftOver.length > 0) propagateBitsets(graph, sources, targets, leftOver, answers);
  return answers;
}

/**
 * Depth-first forest over dependents, rooted at the steps without dependencies in topological
 * order: `enter` numbers the steps in visiting order and `last` is the highest number inside each
 * step's subtree, so a tree ancestor's range contains its descendants' numbers. O(N + E).
 */
function spanningForest(graph: AncestryGraph): { enter: Int32Array; last: Int32Array } {
  const count = graph.position.length;
  const enter = new Int32Array(count).fill(-1);
  const last = new Int32Array(count);
  const stackSlot = new Int32Array(count);
  const stackNext = new Int32Array(count);
  let counter = 0;
  for (const root of graph.order) {
    if ((enter[root] as number) >= 0) continue;
    let depth = 0;
    stackSlot[0] = root;
    stackNext[0] = graph.dependentsStart[root] as number;
    enter[root] = counter++;
    while (depth >= 0) {
      const slot = stackSlot[depth] as number;
      const end = graph.dependentsStart[slot + 1] as number;
      let next = stackNext[depth] as number;
      while (next < end && (enter[graph.dependents[next] as number] as number) >= 0) next++;
      if (next < end) {
        stackNext[depth] = next + 1;
        const child = graph.dependents[next] as number;
        enter[child] = counter++;
        depth++;
        stackSlot[depth] = child;
        stackNext[depth] = graph.dependentsStart[child] as number;
      } else {
        last[slot] = counter - 1;
        depth--;
      }
    }
  }
  return { enter, last };
}

/**
 * Answers `queries` by pushing one bit per distinct target down the topological order (a step's
 * bits are the OR of its dependencies' bits), in passes of WORDS_PER_PASS × 32 targets sorted by
 * position. A pass allocates and walks only positions from its first target to its last source.
 */
function propagateBitsets(
  graph: AncestryGraph,
  sources: readonly number[],
  targets: readonly number[],
  queries: readonly number[],
  answers: Uint8Array,
): void {
  const { order, position, dependencies } = graph;
  const bitOf = new Int32Array(position.length).fill(-1);
  const distinct: number[] = [];
  for (const query of queries) {
    const target = targets[query] as number;
    if (bitOf[target] === -1) {
      bitOf[target] = 0;
      distinct.push(target);
    }
  }
  distinct.sort((a, b) => (position[a] as number) - (position[b] as number));
  distinct.forEach((target, bit) => {
    bitOf[target] = bit;
  });
  const perPass = WORDS_PER_PASS * 32;
  const passes: number[][] = Array.from({ length: Math.ceil(distinct.length / perPass) }, () => []);
  for (const query of queries)
    (passes[Math.floor((bitOf[targets[query] as number] as number) / perPass)] as number[]).push(query);

  passes.forEach((passQueries, pass) => {
    const firstBit = pass * perPass;
    const words = Math.ceil(Math.min(perPass, distinct.length - firstBit) / 32);
    const low = position[distinct[firstBit] as number] as number;
    let high = low;
    for (const query of passQueries) high = Math.max(high, position[sources[query] as number] as number);
    const bits = new Int32Array((high - low + 1) * words);
    for (let at = low; at <= high; at++) {
      const slot = order[at] as number;
      const row = (at - low) * words;
      for (const dependency of dependencies[slot] as readonly number[]) {
        const from = (position[dependency] as number) - low;
        if (from < 0) continue;
        for (let word = 0, fromRow = from * words; word < words; word++) {
          bits[row + word] = (bits[row + word] as number) | (bits[fromRow + word] as number);
        }
      }
      const bit = (bitOf[slot] as number) - firstBit;
      if (bit >= 0 && bit < perPass) bits[row + (bit >>> 5)] = (bits[row + (bit >>> 5)] as number) | (1 << (bit & 31));
    }
    for (const query of passQueries) {
      const bit = (bitOf[targets[query] as number] as number) - firstBit;
      const row = ((position[sources[query] as number] as number) - low) * words;
      answers[query] = ((bits[row + (bit >>> 5)] as number) >>> (bit & 31)) & 1;
    }
  });
}
