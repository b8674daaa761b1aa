import {
  dependenciesEnd,
  dependenciesStart,
  mayReach,
  type ReachabilityLabels,
  surelyReaches,
} from './reachability-labels.js';

/** A search's answer when it ran out of edges before it knew. */
export const UNSETTLED = -1;

/**
 * Breadth-first searches back from a step through its dependencies, one query at a time, marking
 * visited steps with the query's number so nothing is cleared between queries. A step the labels
 * say the target cannot reach is not entered; one they say it surely reaches ends the search.
 */
export class AncestorSearch {
  private readonly visitedBy: Int32Array;
  private readonly queue: Int32Array;
  private searches = 0;
  /** Dependency edges the last `settle` looked at (the caller's budget). */
  edges = 0;

  constructor(private readonly labels: ReachabilityLabels) {
    this.visitedBy = new Int32Array(labels.steps);
    this.queue = new Int32Array(labels.steps);
  }

  /** Is `target` an ancestor of `source`? 1 or 0, or UNSETTLED after looking at `maxEdges` dependency edges. */
  settle(source: number, target: number, maxEdges: number): number {
    const { labels, visitedBy, queue } = this;
    this.edges = 0;
    if (!mayReach(labels, target, source)) return 0;
    if (surelyReaches(labels, target, source)) return 1;
    const mark = ++this.searches;
    const { dependencyList } = labels;
    visitedBy[source] = mark;
    queue[0] = source;
    for (let head = 0, tail = 1; head < tail; head++) {
      const slot = queue[head] as number;
      const end = dependenciesEnd(labels, slot);
      for (let edge = dependenciesStart(labels, slot); edge < end; edge++) {
        if (++this.edges > maxEdges) return UNSETTLED;
        const dependency = dependencyList[edge] as number;
        if (dependency === target) return 1;
        if (visitedBy[dependency] === mark) continue;
        visitedBy[dependency] = mark;
        if (!mayReach(labels, target, dependency)) continue;
        if (surelyReaches(labels, target, dependency)) return 1;
        queue[tail++] = dependency;
      }
    }
    return 0;
  }
}
