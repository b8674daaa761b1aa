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
import { seededRandom } from '../testing/fixtures.js';
import { type AncestryWork, answerAncestorQueries, type SearchLimits } from './ancestor-queries.js';

/**
 * Default limits (the near bitsets and the searches settle nearly all), searches without the near
 * bitsets, near bitsets then the last stage's bitsets (a wide and a narrow window), the last stage
 * only, and tiny (searches whose budget runs out).
 */
const limitSettings: Record<string, SearchLimits | undefined> = {
  default: undefined,
  'searches only': { edgesPerSearch: 1024, edgesPerItem: 64, nearSpan: 0 },
  'near bitsets only': { edgesPerSearch: 0, edgesPerItem: 0, nearSpan: 2048 },
  'near bitsets in a narrow window': { edgesPerSearch: 0, edgesPerItem: 0, nearSpan: 6 },
  'bitsets only': { edgesPerSearch: 0, edgesPerItem: 0, nearSpan: 0 },
  tiny: { edgesPerSearch: 3, edgesPerItem: 1, nearSpan: 0 },
};

const noWork = (): AncestryWork => ({
  near: 0,
  searched: 0,
  searchedEdges: 0,
  leftToBitsets: 0,
  labelled: false,
  recorded: false,
});

function randomQueries(size: number, count: number, seed: number): { sources: number[]; targets: number[] } {
  const random = seededRandom(seed);
  const sources: number[] = [];
  const targets: number[] = [];
  for (let k = 0; k < count; k++) {
    sources.push(Math.floor(random() * size));
    targets.push(Math.floor(random() * size));
  }
  return { sources, targets };
}

function expectOracle(dependencies: Dependencies, sources: number[], targets: number[], limits?: SearchLimits) {
  const work = noWork();
  const answers = answerAncestorQueries(ancestryGraph(dependencies), sources, targets, limits, work);
  let positives = 0;
  sources.forEach((source, query) => {
    const expected = reaches(dependencies, source, targets[query] as number);
    if (expected) positives++;
    expect(answers[query] === 1, `query ${query}: ${targets[query]} → ${source}`).toBe(expected);
  });
  return { positives, work };
}

/** A reference to a random ancestor of each step, `hops` dependency links back. */
function ancestorQueries(dependencies: Dependencies, hops: number, seed: number) {
  const random = seededRandom(seed);
  const sources: number[] = [];
  const targets: number[] = [];
  dependencies.forEach((_, source) => {
    let target = source;
    for (let hop = 0; hop < hops && (dependencies[target] as number[]).length > 0; hop++) {
      const own = dependencies[target] as number[];
      target = own[Math.floor(random() * own.length)] as number;
    }
    if (target !== source) {
      sources.push(source);
      targets.push(target);
    }
  });
  return { sources, targets };
}

/** 1–3 dependencies per step among the `window` steps before it, slots in plan order (as plans are written). */
function windowDependencies(size: number, seed: number, window: number): Dependencies {
  const random = seededRandom(seed);
  return Array.from({ length: size }, (_, step) => {
    const own = new Set<number>();
    for (let k = step === 0 ? 3 : Math.floor(random() * 3); k < 3; k++) {
      own.add(step - 1 - Math.floor(random() * Math.min(window, step)));
    }
    return [...own];
  });
}

describe('answerAncestorQueries', () => {
  for (const [setting, limits] of Object.entries(limitSettings)) {
    it(`agrees with a backward search on random DAGs and random pairs (${setting} limits)`, () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 120 }),
          fc.integer({ min: 1, max: 1_000_000 }),
          fc.integer({ min: 1, max: 30 }),
          fc.integer({ min: 0, max: 4 }),
          (size, seed, window, fanIn) => {
            const dependencies = randomDependencies(size, seed, window, fanIn);
            const { sources, targets } = randomQueries(size, 3 * size, seed + 1);
            expectOracle(dependencies, sources, targets, limits);
          },
        ),
        { numRuns: 200 },
      );
    }, 180_000);

    it(`agrees with a backward search on grids and interleaved chains (${setting} limits)`, () => {
      for (const dependencies of [
        gridDependencies(17, 23),
        interleavedDependencies(600, 7, 3),
        interleavedDependencies(500, 1, 4),
      ]) {
        const { sources, targets } = randomQueries(dependencies.length, 2000, dependencies.length);
        const { positives } = expectOracle(dependencies, sources, targets, limits);
        expect(positives).toBeGreaterThan(100);
      }
    }, 180_000);
  }

  it('answers more distinct targets than one bitset pass holds (several passes, windows)', () => {
    const dependencies = randomDependencies(6000, 99, 40, 3);
    const { sources, targets } = randomQueries(6000, 8000, 5);
    const { positives, work } = expectOracle(dependencies, sources, targets, limitSettings['bitsets only']);
    expect(work.searched).toBe(0);
    expect(work.leftToBitsets).toBeGreaterThan(2048);
    expect(positives).toBeGreaterThan(100);
    expect(positives).toBeLessThan(sources.length - 100);
  }, 180_000);

  it('answers references many links back within a window by the near bitsets, without a search', () => {
    // Each step depends on 1–3 of the 50 before it in plan order and references an ancestor 40 links back.
    const dependencies = windowDependencies(20_000, 17, 50);
    const { sources, targets } = ancestorQueries(dependencies, 40, 3);
    const work = noWork();
    const answers = answerAncestorQueries(ancestryGraph(dependencies), sources, targets, undefined, work);
    expect(answers.indexOf(0)).toBe(-1);
    expect(work.near).toBeGreaterThan(0.9 * sources.length);
    expect(work.searched + work.leftToBitsets).toBeLessThan(0.01 * sources.length);
    // Pairs at random in the same graph: near ones answered by the bitsets agree with a search.
    const random = seededRandom(23);
    const pairs = { sources: [] as number[], targets: [] as number[] };
    for (let k = 0; k < 20_000; k++) {
      const source = Math.floor(random() * dependencies.length);
      pairs.sources.push(source);
      pairs.targets.push(Math.floor(random() * dependencies.length));
    }
    const graph = ancestryGraph(dependencies);
    const order = Array.from(graph.position.keys()).sort(
      (a, b) => (graph.position[a] as number) - (graph.position[b] as number),
    );
    // A target 1–600 places before its source in the topological order.
    pairs.targets = pairs.sources.map((source) => {
      const at = Math.max(0, (graph.position[source] as number) - 1 - Math.floor(random() * 600));
      return order[at] as number;
    });
    const near = expectOracle(dependencies, pairs.sources, pairs.targets);
    expect(near.work.near).toBeGreaterThan(10_000);
    expect(near.positives).toBeGreaterThan(1000);
    expect(near.positives).toBeLessThan(pairs.sources.length - 1000);
  }, 120_000);

  it('answers short and long paths back, and non-ancestors at any distance, through the records', () => {
    // Dependencies on any earlier step: ancestors 1–12 links back lie anywhere before their source.
    const dependencies = windowDependencies(6000, 31, 6000);
    const queries = { sources: [] as number[], targets: [] as number[] };
    for (let hops = 1; hops <= 12; hops++) {
      const { sources, targets } = ancestorQueries(dependencies, hops, hops);
      queries.sources.push(...sources.slice(0, 300));
      queries.targets.push(...targets.slice(0, 300));
    }
    const pairs = randomQueries(dependencies.length, 3000, 37);
    queries.sources.push(...pairs.sources);
    queries.targets.push(...pairs.targets);
    const { positives, work } = expectOracle(dependencies, queries.sources, queries.targets);
    expect(work.recorded).toBe(true);
    expect(work.leftToBitsets).toBe(0);
    expect(positives).toBeGreaterThan(3000);
    expect(positives).toBeLessThan(queries.sources.length - 1000);
  }, 120_000);

  it('stops searching when the budget is spent and leaves the rest to the bitsets', () => {
    const dependencies = gridDependencies(60, 60);
    const { sources, targets } = randomQueries(dependencies.length, 3000, 8);
    const { work } = expectOracle(dependencies, sources, targets, { edgesPerSearch: 50, edgesPerItem: 1, nearSpan: 0 });
    expect(work.leftToBitsets).toBeGreaterThan(0);
    // The budget: one edge per step, edge and query, plus the one search that overran it.
    expect(work.searchedEdges).toBeLessThanOrEqual(3600 + 7080 + 3000 + 50);
  });

  // The shapes that were quadratic with a spanning forest and bitsets: every reference is settled
  // by the labels or a short search, and the work per reference does not grow with the plan.
  for (const [shape, build, hops] of [
    ['references many hops back in a random DAG', (size: number) => randomDependencies(size, 7, size, 3), () => 6],
    [
      'references far back along interleaved chains',
      (size: number) => interleavedDependencies(size, 16, 9),
      (size: number) => size / 32,
    ],
    ['references a few links back in a random DAG', (size: number) => randomDependencies(size, 5, size, 3), () => 3],
  ] as const) {
    it(`settles ${shape} with a bounded search`, () => {
      const perReference: number[] = [];
      const labelled: boolean[] = [];
      for (const size of [5000, 20_000]) {
        const dependencies = build(size);
        // Ancestors by construction: every answer must be 1.
        const { sources, targets } = ancestorQueries(dependencies, hops(size), size);
        const work = noWork();
        const answers = answerAncestorQueries(ancestryGraph(dependencies), sources, targets, undefined, work);
        expect(answers.indexOf(0)).toBe(-1);
        expect(work.leftToBitsets).toBe(0);
        perReference.push(work.searchedEdges / sources.length);
        labelled.push(work.labelled);
      }
      expect(perReference[1]).toBeLessThan(32);
      expect(perReference[1]).toBeLessThan(2 * (perReference[0] as number) + 1);
      // A few links back, searches without labels settle them all: no labels are built.
      if (shape.includes('a few links')) expect(labelled).toEqual([false, false]);
    }, 120_000);
  }
});
