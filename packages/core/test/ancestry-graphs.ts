import { type Adjacency, type AncestryGraph, topologicalOrder } from '../src/plan/dependency-index.js';
import { seededRandom } from '../src/testing/fixtures.js';

/** Graphs for the ancestry tests, as dependency lists; `ancestryGraph` sorts them. */
export type Dependencies = number[][];

export function ancestryGraph(dependencies: Dependencies): AncestryGraph {
  const adjacency = adjacencyOf(dependencies);
  const sorted = topologicalOrder(adjacency);
  if (!sorted.acyclic) throw new Error('not acyclic');
  return { position: sorted.position, dependencies: adjacency };
}

/** Dependency lists in the compressed form validation keeps them in. */
function adjacencyOf(dependencies: Dependencies): Adjacency {
  const start = new Int32Array(dependencies.length + 1);
  dependencies.forEach((own, slot) => {
    start[slot + 1] = (start[slot] as number) + own.length;
  });
  return { start, list: Int32Array.from(dependencies.flat()) };
}

/** Slots as a permutation of creation order, so topological order and slot order differ. */
function shuffledSlots(size: number, random: () => number): number[] {
  return Array.from({ length: size }, (_, index) => index).sort(() => random() - 0.5);
}

/** Random DAG whose steps depend on up to `fanIn` of the `window` steps created before them. */
export function randomDependencies(size: number, seed: number, window: number, fanIn: number): Dependencies {
  const random = seededRandom(seed);
  const slotOf = shuffledSlots(size, random);
  const dependencies: Dependencies = Array.from({ length: size }, () => []);
  for (let created = 1; created < size; created++) {
    const count = Math.floor(random() * (fanIn + 1));
    const own = new Set<number>();
    for (let k = 0; k < count; k++) own.add(slotOf[Math.max(0, created - 1 - Math.floor(random() * window))] as number);
    dependencies[slotOf[created] as number] = [...own];
  }
  return dependencies;
}

/** `width` × `height` grid: each cell depends on the cell above and the cell to its left. */
export function gridDependencies(width: number, height: number): Dependencies {
  return Array.from({ length: width * height }, (_, cell) => [
    ...(cell >= width ? [cell - width] : []),
    ...(cell % width > 0 ? [cell - 1] : []),
  ]);
}

/**
 * `chains` chains laid out round-robin (step i continues step i - chains); a quarter of the steps
 * also depend on a step of another chain, so a depth-first forest cuts the chains into pieces.
 */
export function interleavedDependencies(size: number, chains: number, seed: number): Dependencies {
  const random = seededRandom(seed);
  return Array.from({ length: size }, (_, step) => {
    const own = step >= chains ? [step - chains] : [];
    if (step > chains && random() < 0.25) {
      const other = step - 1 - Math.floor(random() * (chains - 1));
      if (!own.includes(other)) own.push(other);
    }
    return own;
  });
}

/** The obvious answer: search backwards from the source (marks in a typed array, so large graphs stay quick). */
export function reaches(dependencies: readonly (readonly number[])[], source: number, target: number): boolean {
  const seen = new Uint8Array(dependencies.length);
  const stack = [...(dependencies[source] ?? [])];
  while (stack.length > 0) {
    const current = stack.pop() as number;
    if (current === target) return true;
    if (seen[current] === 1) continue;
    seen[current] = 1;
    for (const next of dependencies[current] ?? []) stack.push(next);
  }
  return false;
}
