import { type Adjacency, type AncestryGraph, reverseAdjacency, slotsInOrder } from './dependency-index.js';

/*
 * Each step's labels sit side by side in one Int32Array, STRIDE numbers per step: a question
 * about two steps reads two short records instead of a dozen arrays scattered over memory, which
 * at 200,000 steps is the difference between cache hits and misses on every edge searched.
 */
const POSITION = 0;
const PATH = 1;
/** The number of the last search that entered the step (see `enterOnce`): one cache line per step entered. */
const MARK = 2;
/** Forest f's numbers start at FOREST + 2f: enter, then last (see `forest`). */
const FOREST = 3;
const ENTER = 0;
const LAST = 1;
/**
 * The forests, those walking from a step to its dependents first. Three, not four: a second
 * forest over dependents shortened the searches of random plans by a fifth but cost as much time
 * to build as it saved, and 1.6 MB at 200,000 steps; both forests over dependencies are needed
 * for references many hops back along short windows.
 */
const FORESTS = [
  { overDependents: true, reversed: false },
  { overDependents: false, reversed: false },
  { overDependents: false, reversed: true },
] as const;
const UP_FORESTS = FOREST + 2 * FORESTS.filter((forest) => forest.overDependents).length;
const STRIDE = FOREST + 2 * FORESTS.length;

/**
 * Labels that settle most "does t reach u" questions in constant time (`surelyReaches`,
 * `mayReach`), built in O(steps + edges):
 * - the topological position (a step reaches only steps after it);
 * - depth-first forests (see FORESTS), walking from a step to its dependents (children in plan
 *   order) or from a step to its dependencies (from the last step back, children in order and
 *   reversed). A forest numbers steps in visiting order (`enter`); `last` is the highest number in
 *   a step's subtree. Its subtree `[enter, last]` is all reached, and nothing it reaches has a
 *   number above `last`: the search from a step visits everything it reaches that was not
 *   visited before it;
 * - a cover by vertex-disjoint paths along dependency edges (`path`): a step continues the path
 *   of the first dependency it lists that no other step continued (a chain's step lists the one
 *   before it first, as a rule), so a step earlier on the same path is an ancestor, which settles
 *   chains at any distance, interleaved chains included.
 */
export interface ReachabilityLabels {
  readonly steps: number;
  readonly records: Int32Array;
}

/**
 * Scratch arrays of the forest walks, one number per step each; the caller may lend arrays it
 * has spare (the search lends its own: it is not searching while the labels are built).
 */
export interface ForestWork {
  readonly enter: Int32Array;
  readonly stackSlot: Int32Array;
  /** How many children of the step at each depth were looked at. */
  readonly stackTried: Int32Array;
}

export function reachabilityLabels(
  graph: AncestryGraph,
  work: ForestWork = {
    enter: new Int32Array(graph.position.length),
    stackSlot: new Int32Array(graph.position.length),
    stackTried: new Int32Array(graph.position.length),
  },
): ReachabilityLabels {
  const { position, dependencies } = graph;
  const order = slotsInOrder(position);
  const dependents = reverseAdjacency(dependencies);
  const count = order.length;
  const records = new Int32Array(count * STRIDE);
  for (let slot = 0; slot < count; slot++) records[slot * STRIDE + POSITION] = position[slot] as number;
  FORESTS.forEach(({ overDependents, reversed }, at) => {
    const children = overDependents ? dependents : dependencies;
    forest(records, FOREST + 2 * at, order, children, !overDependents, reversed, work);
  });
  pathCover(records, order, dependencies, work);
  return { steps: count, records };
}

/** Marks `step` as entered by search `mark` (numbers from 1 up); false when it was already. */
export function enterOnce(labels: ReachabilityLabels, step: number, mark: number): boolean {
  const at = step * STRIDE + MARK;
  if (labels.records[at] === mark) return false;
  labels.records[at] = mark;
  return true;
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
 * `enter`, read for every edge, is kept in an array of its own and copied in once: read from the
 * records it would cost a cache line per step.
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
  const { enter, stackSlot, stackTried } = work;
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
        records[slot * STRIDE + offset + LAST] = counter - 1;
        depth--;
      }
    }
  }
  for (let slot = 0, record = offset; slot < count; slot++, record += STRIDE) {
    records[record + ENTER] = enter[slot] as number;
  }
}

/** Path ids (see `ReachabilityLabels`), in topological order: O(steps + edges). */
function pathCover(records: Int32Array, order: Int32Array, dependencies: Adjacency, work: ForestWork): void {
  const { start, list } = dependencies;
  const path = work.enter;
  // continued[slot] === 1 ⇔ a step continues slot's path.
  const continued = work.stackSlot.fill(0);
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
