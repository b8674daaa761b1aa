import { type AncestryGraph, slotsInOrder } from './dependency-index.js';

/** Targets answered per pass of the bitset propagation: 64 words of 32 bits per step. */
const WORDS_PER_PASS = 64;

/**
 * Answers `queries` by pushing one bit per distinct target down the topological order (a step's
 * bits are the OR of its dependencies' bits), in passes of WORDS_PER_PASS × 32 targets sorted by
 * position. A pass allocates and walks only positions from its first target to its last source.
 */
export function propagateBitsets(
  graph: AncestryGraph,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  queries: Int32Array,
  answers: Uint8Array,
): void {
  const { position } = graph;
  const order = slotsInOrder(position);
  const { start, list } = graph.dependencies;
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
      for (let edge = start[slot] as number; edge < (start[slot + 1] as number); edge++) {
        const from = (position[list[edge] as number] as number) - low;
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
