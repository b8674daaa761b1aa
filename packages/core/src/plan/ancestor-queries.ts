import { AncestorSearch, UNSETTLED } from './ancestor-search.js';
import type { AncestryGraph } from './dependency-index.js';
import { IntList } from './int-list.js';
import { propagateBitsets } from './propagate-bitsets.js';
import { reachabilityLabels } from './reachability-labels.js';

/** How much the searches of stage 2 may look at (tests lower it to reach stage 3). */
export interface SearchLimits {
  /** Dependency edges one search may look at before its query is left to the bitsets. */
  readonly edgesPerSearch: number;
  /** Edges all searches together may look at, per step, edge and query of the graph. */
  readonly edgesPerItem: number;
}

/** What the stages did (tests and the benchmark read it). */
export interface AncestryWork {
  /** Queries settled by labels or a search (stage 2). */
  searched: number;
  /** Dependency edges the searches looked at. */
  searchedEdges: number;
  /** Queries left to the bitsets (stage 3). */
  leftToBitsets: number;
}

const DEFAULT_LIMITS: SearchLimits = { edgesPerSearch: 1024, edgesPerItem: 16 };

/**
 * For each query q, is `targets[q]` a (transitive) dependency of `sources[q]`? Answers 1 or 0.
 *
 * In three stages, each taking only what the one before left:
 * 1. the topological-position test and the direct dependencies: O(N + E + R) for N steps, E edges
 *    and R queries (chains, fan-out/fan-in, references to a dependency);
 * 2. labels built in O(N + E) (see `reachabilityLabels`: four depth-first forests and a path
 *    cover) that settle a query at once when they can, and otherwise a breadth-first search back
 *    from the source that enters only steps the labels leave possible and stops at the first one
 *    they say the target surely reaches. One search looks at no more than `edgesPerSearch` edges
 *    (1,024), all of them together at most `edgesPerItem` (16) × (N + E + R): this stage is linear;
 * 3. the queries a search gave up on are answered together by propagating bitsets along the
 *    topological order (`propagateBitsets`): O((N + E) · ⌈T / 32⌉) for T distinct targets left.
 *
 * Exact reachability between arbitrary pairs has no known linear algorithm, so stage 3 stays for
 * graphs the labels do not capture (a wide grid with references across it is one); on the shapes
 * plans have — chains, trees, fan-out, random graphs, interleaved chains, references many hops
 * back — stage 2 settles every query within a few dozen edges and stage 3 gets little or nothing.
 */
export function answerAncestorQueries(
  graph: AncestryGraph,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  limits: SearchLimits = DEFAULT_LIMITS,
  work: AncestryWork = { searched: 0, searchedEdges: 0, leftToBitsets: 0 },
): Uint8Array {
  const answers = new Uint8Array(sources.length);
  const undecided = answerDirectly(graph, sources, targets, answers);
  if (undecided.length === 0) return answers;

  const search = new AncestorSearch(reachabilityLabels(graph));
  let budget = limits.edgesPerItem * (graph.order.length + graph.dependents.list.length + sources.length);
  const leftOver = new IntList(Math.min(undecided.length, 1024));
  for (let index = 0; index < undecided.length; index++) {
    const query = undecided[index] as number;
    if (budget <= 0) {
      leftOver.push(query);
      continue;
    }
    const source = sources[query] as number;
    const answer = search.settle(source, targets[query] as number, Math.min(limits.edgesPerSearch, budget));
    budget -= search.edges;
    work.searchedEdges += search.edges;
    if (answer === UNSETTLED) {
      leftOver.push(query);
    } else {
      answers[query] = answer;
      work.searched++;
    }
  }
  work.leftToBitsets = leftOver.length;
  if (leftOver.length > 0) propagateBitsets(graph, sources, targets, leftOver.view(), answers);
  return answers;
}

/**
 * Stage 1: a direct dependency is an ancestor (1); a target at or after the source in the order is
 * not (0). Returns the queries left undecided. A short dependency list is scanned in place (no
 * array indexed by slot touched); a long one is marked once for the run of queries from its source.
 */
function answerDirectly(
  graph: AncestryGraph,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  answers: Uint8Array,
): Int32Array {
  const { position, dependencies } = graph;
  const { start, list } = dependencies;
  const undecided = new IntList(1024);
  // marked[slot] === source + 1 ⇔ slot is a direct dependency of `source` (long lists only).
  let marked: Int32Array | undefined;
  let markedFor = -1;
  for (let query = 0; query < sources.length; query++) {
    const source = sources[query] as number;
    const target = targets[query] as number;
    const first = start[source] as number;
    const end = start[source + 1] as number;
    let direct = false;
    if (end - first <= LONG_LIST) {
      for (let edge = first; edge < end && !direct; edge++) direct = list[edge] === target;
    } else {
      marked ??= new Int32Array(position.length);
      if (source !== markedFor) {
        for (let edge = first; edge < end; edge++) marked[list[edge] as number] = source + 1;
        markedFor = source;
      }
      direct = marked[target] === source + 1;
    }
    if (direct) answers[query] = 1;
    else if ((position[target] as number) < (position[source] as number)) undecided.push(query);
  }
  return undecided.view();
}

/** Dependency lists longer than this are marked in an array rather than scanned per query. */
const LONG_LIST = 16;
