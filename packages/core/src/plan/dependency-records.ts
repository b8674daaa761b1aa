import type { AncestryGraph } from './dependency-index.js';

/** A record: the step's position, the number of the last search that entered it, its dependency count, its dependencies. */
const POSITION = 0;
const MARK = 1;
const COUNT = 2;
const DEPENDENCIES = 3;

/**
 * The dependency graph laid out for backward searches: one record per step, in slot order, each
 * holding what a search reads about the step — its position, the number of the last search that
 * entered it, and its dependencies, each given as the offset of that dependency's own record.
 * A search then reads one record per step it meets: with the position and mark in one array and
 * the dependency lists in two others, a step entered cost three cache misses (its mark, then
 * where its list starts, then the list). On references 2–8 random links back in a random plan of
 * 200,000 steps, the searches over the records took about half the time of those over the lists.
 * 3 numbers per step and one per edge.
 */
export class DependencyRecords {
  private readonly records: Int32Array;
  private readonly start: Int32Array;
  private searches = 0;
  /** Dependency edges the last `settle` looked at. */
  edges = 0;

  /** Built in O(steps + edges); `queue` (one number per step) is the searches' scratch. */
  constructor(
    graph: AncestryGraph,
    private readonly queue: Int32Array,
  ) {
    const { position } = graph;
    const { start, list } = graph.dependencies;
    this.start = start;
    const count = position.length;
    const records = new Int32Array(DEPENDENCIES * count + list.length);
    for (let slot = 0; slot < count; slot++) {
      const record = DEPENDENCIES * slot + (start[slot] as number);
      const end = start[slot + 1] as number;
      records[record + POSITION] = position[slot] as number;
      records[record + COUNT] = end - (start[slot] as number);
      let at = record + DEPENDENCIES;
      for (let edge = start[slot] as number; edge < end; edge++) {
        const dependency = list[edge] as number;
        records[at++] = DEPENDENCIES * dependency + (start[dependency] as number);
      }
    }
    this.records = records;
  }

  /**
   * Is `target` a (transitive) dependency of `source`? 1 or 0, or `unsettled` after looking at
   * `maxEdges` edges. Breadth-first back from the source, entering only steps after the target
   * in the topological order; the same steps and edges, in the same order, as a search over the
   * dependency lists.
   */
  settle(source: number, target: number, maxEdges: number, unsettled: number): number {
    const { records, queue, start } = this;
    const targetRecord = DEPENDENCIES * target + (start[target] as number);
    const floor = records[targetRecord + POSITION] as number;
    const mark = ++this.searches;
    queue[0] = DEPENDENCIES * source + (start[source] as number);
    records[(queue[0] as number) + MARK] = mark;
    let edges = 0;
    let answer = 0;
    search: for (let head = 0, tail = 1; head < tail; head++) {
      const record = queue[head] as number;
      const end = record + DEPENDENCIES + (records[record + COUNT] as number);
      for (let at = record + DEPENDENCIES; at < end; at++) {
        if (++edges > maxEdges) {
          answer = unsettled;
          break search;
        }
        const dependency = records[at] as number;
        if (dependency === targetRecord) {
          answer = 1;
          break search;
        }
        if (records[dependency + MARK] === mark) continue;
        records[dependency + MARK] = mark;
        if ((records[dependency + POSITION] as number) > floor) queue[tail++] = dependency;
      }
    }
    this.edges = edges;
    return answer;
  }
}
