import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../testing/fixtures.js';
import { answerAncestorQueries } from './ancestor-queries.js';
import { topologicalOrder } from './dependency-index.js';

/** Random DAG whose steps depend on up to `fanIn` of the `window` steps before them (shuffled slots). */
function randomGraph(size: number, seed: number, window: number, fanIn: number) {
  const random = seededRandom(seed);
  // Slots are a permutation of creation order, so topological order and slot order differ.
  const slotOf = Array.from({ length: size }, (_, index) => index).sort(() => random() - 0.5);
  const dependencies: number[][] = Array.from({ length: size }, () => []);
  for (let created = 1; created < size; created++) {
    const count = Math.floor(random() * (fanIn + 1));
    const own = new Set<number>();
    for (let k = 0; k < count; k++) {
      own.add(slotOf[Math.max(0, created - 1 - Math.floor(random() * window))] as number);
    }
    dependencies[slotOf[created] as number] = [...own];
  }
  const sorted = topologicalOrder(dependencies);
  if (!sorted.order) throw new Error('not acyclic');
  return { ...sorted, order: sorted.order, dependencies };
}

/** The obvious answer: search backwards from the source (marks in a typed array, so large graphs stay quick). */
function reaches(dependencies: readonly (readonly number[])[], source: number, target: number): boolean {
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

describe('answerAncestorQueries', () => {
  it('agrees with a backward search on random DAGs and random pairs', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 4 }),
        (size, seed, window, fanIn) => {
          const graph = randomGraph(size, seed, window, fanIn);
          const random = seededRandom(seed + 1);
          const sources: number[] = [];
          const targets: number[] = [];
          for (let k = 0; k < 3 * size; k++) {
            sources.push(Math.floor(random() * size));
            targets.push(Math.floor(random() * size));
          }
          const answers = answerAncestorQueries(graph, sources, targets);
          sources.forEach((source, query) => {
            expect(answers[query] === 1).toBe(reaches(graph.dependencies, source, targets[query] as number));
          });
        },
      ),
      { numRuns: 300 },
    );
  }, 180_000);

  it('answers more distinct targets than one bitset pass holds (several passes, windows)', () => {
    const size = 6000;
    const graph = randomGraph(size, 99, 40, 3);
    const random = seededRandom(5);
    const sources: number[] = [];
    const targets: number[] = [];
    for (let k = 0; k < 8000; k++) {
      const source = Math.floor(random() * size);
      sources.push(source);
      // Mostly near the source in creation terms (both answers occur), across the whole plan.
      targets.push(Math.floor(random() * size));
    }
    const answers = answerAncestorQueries(graph, sources, targets);
    let positives = 0;
    sources.forEach((source, query) => {
      const expected = reaches(graph.dependencies, source, targets[query] as number);
      if (expected) positives++;
      expect(answers[query] === 1).toBe(expected);
    });
    expect(positives).toBeGreaterThan(100);
    expect(positives).toBeLessThan(sources.length - 100);
  }, 180_000);
});
