import type { AncestryGraph } from './dependency-index.js';
import {
  ForestWork,
  mayReach,
  type ReachabilityLabels,
  reachabilityLabels,
  surelyReaches,
} from './reachability-labels.js';

/** A search's answer when it ran out of edges before it knew. */
export const UNSETTLED = -1;

/**
 * Breadth-first searches back from a step through its dependencies, one query at a time, marking
 * visited steps with the query's number so nothing is cleared between queries. Without labels a
 * step at or before the target in the topological order is not entered (the target cannot reach
 * it); with labels (`useLabels`), a step they say the target cannot reach is not entered, and one
 * they say it surely reaches ends the search.
 */
export class AncestorSearch {
  private readonly visitedBy: Int32Array;
  private readonly queue: Int32Array;
  private labels: ReachabilityLabels | undefined;
  private searches = 0;
  /** Dependency edges the last `settle` looked at (the caller's budget). */
  edges = 0;

  constructor(private readonly graph: AncestryGraph) {
    this.visitedBy = new Int32Array(graph.order.length);
    this.queue = new Int32Array(graph.order.length);
  }

  /** Builds the labels and prunes with them from now on; their forests are walked in this search's arrays. */
  useLabels(): void {
    this.labels = reachabilityLabels(this.graph, new ForestWork(this.visitedBy, this.queue));
    this.visitedBy.fill(0);
    this.searches = 0;
  }

  /** Is `target` an ancestor of `source`? 1 or 0, or UNSETTLED after looking at `maxEdges` dependency edges. */
  settle(source: number, target: number, maxEdges: number): number {
    const { labels, visitedBy, queue } = this;
    const { position } = this.graph;
    const { start, list } = this.graph.dependencies;
    this.edges = 0;
    if (labels && !mayReach(labels, target, source)) return 0;
    if (labels && surelyReaches(labels, target, source)) return 1;
    const floor = position[target] as number;
    const mark = ++this.searches;
    visitedBy[source] = mark;
    queue[0] = source;
    for (let head = 0, tail = 1; head < tail; head++) {
      const slot = queue[head] as number;
      const end = start[slot + 1] as number;
      for (let edge = start[slot] as number; edge < end; edge++) {
        if (++this.edges > maxEdges) return UNSETTLED;
        const dependency = list[edge] as number;
        if (dependency === target) return 1;
        if (visitedBy[dependency] === mark) continue;
        visitedBy[dependency] = mark;
        if (labels) {
          if (!mayReach(labels, target, dependency)) continue;
          if (surelyReaches(labels, target, dependency)) return 1;
        } else if ((position[dependency] as number) <= floor) {
          continue;
        }
        queue[tail++] = dependency;
      }
    }
    return 0;
  }
}
