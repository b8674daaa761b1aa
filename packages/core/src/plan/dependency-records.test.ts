import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ancestryGraph, gridDependencies, randomDependencies } from '../../test/ancestry-graphs.js';
import { seededRandom } from '../testing/fixtures.js';
import { AncestorSearch, UNSETTLED } from './ancestor-search.js';
import { SpareInts } from './spare-ints.js';

/** Every query's answer and edge count, by the search over dependency lists and over the records alike. */
function bothWays(dependencies: number[][], queries: number, seed: number, maxEdges: number) {
  const graph = ancestryGraph(dependencies);
  const lists = new AncestorSearch(graph, new SpareInts());
  const records = new AncestorSearch(graph, new SpareInts()).records();
  const random = seededRandom(seed);
  const differences: string[] = [];
  let unsettled = 0;
  for (let query = 0; query < queries; query++) {
    const source = Math.floor(random() * dependencies.length);
    const target = Math.floor(random() * dependencies.length);
    const expected = lists.settle(source, target, maxEdges);
    const answer = records.settle(source, target, maxEdges, UNSETTLED);
    if (expected === UNSETTLED) unsettled++;
    if (answer !== expected || records.edges !== lists.edges) {
      differences.push(`${target} → ${source}: ${answer} after ${records.edges}, not ${expected} after ${lists.edges}`);
    }
  }
  return { differences, unsettled };
}

describe('DependencyRecords', () => {
  it('answers as the search over dependency lists does, with the same edges, budgets included', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 0, max: 5 }),
        fc.constantFrom(1, 2, 5, 40, Number.POSITIVE_INFINITY),
        (size, seed, window, fanIn, maxEdges) => {
          const dependencies = randomDependencies(size, seed, window, fanIn);
          expect(bothWays(dependencies, 3 * size, seed + 1, maxEdges).differences).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('runs out of edges where the lists do, on a grid', () => {
    const { differences, unsettled } = bothWays(gridDependencies(30, 30), 2000, 4, 50);
    expect(differences).toEqual([]);
    expect(unsettled).toBeGreaterThan(100);
  });
});
