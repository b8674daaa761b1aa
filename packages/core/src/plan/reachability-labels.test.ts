import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ancestryGraph,
  type Dependencies,
  gridDependencies,
  interleavedDependencies,
  randomDependencies,
  reaches,
} from '../../test/ancestry-graphs.js';
import { mayReach, reachabilityLabels, surelyReaches } from './reachability-labels.js';

/**
 * Every ordered pair: a certain answer is never wrong. Counts, among the pairs whose topological
 * positions leave the question open (target before step), how many each label settles.
 */
function checkEveryPair(dependencies: Dependencies) {
  const graph = ancestryGraph(dependencies);
  const labels = reachabilityLabels(graph);
  const counts = { open: 0, reachable: 0, sure: 0, excluded: 0 };
  for (let step = 0; step < dependencies.length; step++) {
    for (let target = 0; target < dependencies.length; target++) {
      if (target === step) continue;
      const truth = reaches(dependencies, step, target);
      const open = (graph.position[target] as number) < (graph.position[step] as number);
      if (open) counts.open++;
      if (truth) counts.reachable++;
      if (surelyReaches(labels, target, step)) {
        counts.sure++;
        expect(truth, `surelyReaches(${target}, ${step})`).toBe(true);
      }
      if (!mayReach(labels, target, step)) {
        if (open) counts.excluded++;
        expect(truth, `mayReach(${target}, ${step})`).toBe(false);
      }
    }
  }
  return counts;
}

describe('reachabilityLabels', () => {
  it('never claims a path that is not there, nor denies one that is (random DAGs)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 0, max: 4 }),
        (size, seed, window, fanIn) => {
          checkEveryPair(randomDependencies(size, seed, window, fanIn));
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000);

  it('settles most open pairs on their own on grids and interleaved chains', () => {
    for (const dependencies of [gridDependencies(9, 11), interleavedDependencies(150, 5, 2)]) {
      const { open, reachable, sure, excluded } = checkEveryPair(dependencies);
      // Labels that settle nothing would leave every open pair to a search.
      expect(sure).toBeGreaterThan(reachable * 0.6);
      expect(excluded).toBeGreaterThan((open - reachable) * 0.6);
    }
  });

  it('puts every step of a chain on one path, whatever else the chains depend on', () => {
    // Four chains, a quarter of the steps also depending on a recent step of another chain: the
    // depth-first forests cut the chains into pieces, the path cover does not.
    const dependencies = interleavedDependencies(400, 4, 1);
    const labels = reachabilityLabels(ancestryGraph(dependencies));
    for (let step = 4; step < 400; step++) expect(surelyReaches(labels, step % 4, step)).toBe(true);
  });
});
