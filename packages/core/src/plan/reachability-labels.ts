import type { Adjacency, AncestryGraph } from './dependency-index.js';

/*
 * Each step's labels sit side by side in one Int32Array, STRIDE numbers per step: a question
 * about two steps reads two short records instead of a dozen arrays scattered over memory, which
 * at 200,000 steps is the difference between cache hits and misses on every edge searched.
 */
const POSITION = 0;
const PATH = 1;
/** Where the step's dependencies start and end in `dependencyList`. */
const DEPENDENCIES_START = 2;
const DEPENDENCIES_END = 3;
/** Forest f's numbers start at FOREST + 2f: enter, then last (see `forest`). */
const FOREST = 4;
const ENTER = 0;
const LAST = 1;
/** Forests 0 and 1 walk from a step to its dependents, 2 and 3 (from UP_FORESTS on) to its dependencies. */
const UP_FORESTS = FOREST + 4;
const STRIDE = FOREST + 8;

/**
 * Labels that settle most "does t reach u" questions in constant time (`surelyReaches`,
 * `mayReach`), built in O(steps + edges):
 * - the topological position (a step reaches only steps after it);
 * - four depth-first forests, two walking from a step to its dependents (children in plan order
 *   and reversed) and two from a step to its dependencies (from the last step back). A forest
 *   numbers steps in visiting order (`enter`); `last` is the highest number in a step's subtree.
 *   Its subtree `[enter, last]` is all reached, and nothing it reaches has a number above `last`:
 *   the search from a step visits everything it reaches that was not visited before it;
 * - a cover by vertex-disjoint paths along dependency edges (`path`): a step continues the path
 *   of the first dependency it lists that no other step continued (a chain's step lists the one
 *   before it first, as a rule), so a step earlier on the same path is an ancestor, which settles
 *   chains at any distance, interleaved chains included.
 */
export interface ReachabilityLabels {
  readonly steps: number;
  readonly records: Int32Array;
  /** Every step's dependencies, one after another (ranges in the records). */
  readonly dependencyList: Int32Array;
}

export function reachabilityLabels(graph: AncestryGraph): ReachabilityLabels {
  const { order, position, dependents, dependencies } = graph;
  const count = order.length;
  const records = new Int32Array(count * STRIDE);
  for (let slot = 0, record = 0; slot < count; slot++, record += STRIDE) {
    records[record + POSITION] = position[slot] as number;
    records[record + DEPENDENCIES_START] = dependencies.start[slot] as number;
    records[record + DEPENDENCIES_END] = dependencies.start[slot + 1] as number;
  }
  // One set of work arrays for the four forests and the path cover.
  const work = new ForestWork(count);
  forest(records, FOREST, order, dependents, false, false, work);
  forest(records, FOREST + 2, order, dependents, false, true, work);
  forest(records, FOREST + 4, order, dependencies, true, false, work);
  forest(records, FOREST + 6, order, dependencies, true, true, work);
  pathCover(records, order, dependencies, work);
  return { steps: count, records, dependencyList: dependencies.list };
}

/** Scratch arrays of a forest walk, one number per step each. */
class ForestWork {
  readonly enter: Int32Array;
  readonly last: Int32Array;
  readonly stackSlot: Int32Array;
  /** How many children of the step at each depth were looked at. */
  readonly stackTried: Int32Array;

  constructor(count: number) {
    this.enter = new Int32Array(count);
    this.last = new Int32Array(count);
    this.stackSlot = new Int32Array(count);
    this.stackTried = new Int32Array(count);
  }
}

/** Where `step`'s dependencies start in `dependencyList`. */
export function dependenciesStart(labels: ReachabilityLabels, step: number): number {
  return labels.records[step * STRIDE + DEPENDENCIES_START] as number;
}

/** Where `step`'s dependencies end (exclusive) in `dependencyList`. */
export function dependenciesEnd(labels: ReachabilityLabels, step: number): number {
  return labels.records[step * STRIDE + DEPENDENCIES_END] as number;
}

/** Certain: true only when `target` reaches `step` (`step` ≠ `target`). */
export function surelyReaches(labels: ReachabilityLabels, target: number, step: number): boolean {
  const { records } = labels;
  const t = target * STRIDE;
  const s = step * STRIDE;
  if (
    records[s + PATH] === records[t + PATH] &&
    (records[t + POSITION] as number) < (records[s + POSITION] as number)
  ) {
    return true;
  }
  // Down forests: step inside target's subtree.
  for (let forest = s + FOREST, of = t + FOREST; forest < s + UP_FORESTS; forest += 2, of += 2) {
    const at = records[forest + ENTER] as number;
    if ((records[of + ENTER] as number) <= at && at <= (records[of + LAST] as number)) return true;
  }
  // Up forests: target inside step's subtree.
  for (let forest = t + UP_FORESTS, of = s + UP_FORESTS; forest < t + STRIDE; forest += 2, of += 2) {
    const at = records[forest + ENTER] as number;
    if ((records[of + ENTER] as number) <= at && at <= (records[of + LAST] as number)) return true;
  }
  return false;
}

/** False only when `target` certainly does not reach `step` (`step` ≠ `target`). */
export function mayReach(labels: ReachabilityLabels, target: number, step: number): boolean {
  const { records } = labels;
  const t = target * STRIDE;
  const s = step * STRIDE;
  if ((records[s + POSITION] as number) <= (records[t + POSITION] as number)) return false;
  // Down forests: step numbered after everything target reaches.
  for (let forest = s + FOREST, of = t + FOREST; forest < s + UP_FORESTS; forest += 2, of += 2) {
    if ((records[forest + ENTER] as number) > (records[of + LAST] as number)) return false;
  }
  // Up forests: target numbered after everything step reaches going back.
  for (let forest = t + UP_FORESTS, of = s + UP_FORESTS; forest < t + STRIDE; forest += 2, of += 2) {
    if ((records[forest + ENTER] as number) > (records[of + LAST] as number)) return false;
  }
  return true;
}

/**
 * A depth-first forest over `children` (dependents, or dependencies when `fromEnd`), trying every
 * step as a root in topological order (`fromEnd`: from the last step back); `reversed` takes each
 * step's children last first. Writes enter and last at `offset` of each record. O(steps + edges).
 * Built in arrays of their own and copied in once: a walk over the records would touch a cache
 * line per step for each number it reads.
 */
function forest(
  records: Int32Array,
  offset: number,
  order: Int32Array,
  children: Adjacency,
  fromEnd: boolean,
  reversed: boolean,
  work: ForestWork,
): void {
  const { start, list } = children;
  const { enter, last, stackSlot, stackTried } = work;
  const count = order.length;
  enter.fill(-1);
  let counter = 0;
  for (let rank = 0; rank < count; rank++) {
    const root = order[fromEnd ? count - 1 - rank : rank] as number;
    if ((enter[root] as number) >= 0) continue;
    let depth = 0;
    stackSlot[0] = root;
    stackTried[0] = 0;
    enter[root] = counter++;
    while (depth >= 0) {
      const slot = stackSlot[depth] as number;
      const first = start[slot] as number;
      const size = (start[slot + 1] as number) - first;
      let tried = stackTried[depth] as number;
      let child = -1;
      while (tried < size && child < 0) {
        const next = list[reversed ? first + size - 1 - tried : first + tried] as number;
        tried++;
        if ((enter[next] as number) < 0) child = next;
      }
      stackTried[depth] = tried;
      if (child >= 0) {
        enter[child] = counter++;
        depth++;
        stackSlot[depth] = child;
        stackTried[depth] = 0;
      } else {
        last[slot] = counter - 1;
        depth--;
      }
    }
  }
  for (let slot = 0, record = offset; slot < count; slot++, record += STRIDE) {
    records[record + ENTER] = enter[slot] as number;
    records[record + LAST] = last[slot] as number;
  }
}

/** Path ids (see `ReachabilityLabels`), in topological order: O(steps + edges). */
function pathCover(records: Int32Array, order: Int32Array, dependencies: Adjacency, work: ForestWork): void {
  const { start, list } = dependencies;
  const path = work.enter;
  // continued[slot] === 1 ⇔ a step continues slot's path.
  const continued = work.last.fill(0);
  let paths = 0;
  for (let rank = 0; rank < order.length; rank++) {
    const slot = order[rank] as number;
    let edge = start[slot] as number;
    const end = start[slot + 1] as number;
    while (edge < end && continued[list[edge] as number] === 1) edge++;
    if (edge < end) {
      const dependency = list[edge] as number;
      continued[dependency] = 1;
      path[slot] = path[dependency] as number;
    } else {
      path[slot] = paths++;
    }
  }
  for (let slot = 0; slot < order.length; slot++) records[slot * STRIDE + PATH] = path[slot] as number;
}
