import { AncestorSearch, UNSETTLED } from './ancestor-search.js';
import type { AncestryGraph } from './dependency-index.js';
import type { DependencyRecords } from './dependency-records.js';
import { IntList } from './int-list.js';
import { answerNearQueries } from './near-bitsets.js';
import { propagateBitsets } from './propagate-bitsets.js';
import { SpareInts } from './spare-ints.js';

/** How much stages 2–4 may take (tests lower it to reach stage 5). */
export interface SearchLimits {
  /** Dependency edges one search may look at before its query is left to a later stage. */
  readonly edgesPerSearch: number;
  /** Edges all searches together may look at, per step, edge and query of the graph. */
  readonly edgesPerItem: number;
  /** Queries whose source is at most this many places after the target may go to the near bitsets (0: none). */
  readonly nearSpan: number;
}

/** What the stages did (tests and the benchmark read it). */
export interface AncestryWork {
  /** Queries settled by the near bitsets (stage 2). */
  near: number;
  /** Queries settled by a search, with or without labels (stages 3 and 4). */
  searched: number;
  /** Dependency edges the searches looked at. */
  searchedEdges: number;
  /** Queries left to the bitsets (stage 5). */
  leftToBitsets: number;
  /** Whether stage 4 built labels. */
  labelled: boolean;
  /** Whether stage 3 laid the graph out in records (see RECORDS_AVERAGE). */
  recorded: boolean;
}

// 64 per item: stage 3 averages up to 128 edges a query and may take half.
// 2,048 places: the near bitsets' scratch is 64 KB.
const DEFAULT_LIMITS: SearchLimits = { edgesPerSearch: 1024, edgesPerItem: 64, nearSpan: 2048 };

/**
 * Stage 3 goes on while its searches look at no more than this many edges per query on average
 * (plus PLAIN_SEARCH_SLACK): a search without labels reads two numbers per step it enters, one with
 * labels a record of eight, and the labels cost four walks over the graph to build. On references
 * 2–8 random links back in a random plan, searches without labels average 55 edges and took half
 * the time of labels and searches with them (18 edges).
 */
const PLAIN_SEARCH_AVERAGE = 128;
const PLAIN_SEARCH_SLACK = 8192;
/**
 * The near bitsets run when at least one undecided query in NEAR_SHARE is near: each costs a pass
 * over the undecided queries and one number per step, which a few near queries do not repay.
 */
const NEAR_SHARE = 4;
/** Queries left over that the bitsets answer in one pass of one word per step, rather than labels. */
const FEW_QUERIES = 32;
/**
 * Stage 3 lays the graph out in records (`DependencyRecords`) once its searches have looked at as
 * many edges as the records cost to build and average at least this many a query. At 200,000
 * steps, on references 2–8 random links back (55 edges a search) the records took about a
 * quarter off the stage, building them included (CPU, paired runs on the same plan), though at
 * 50,000 steps, where the lists fit the caches better, the stage took about 25 ms more; on
 * references 1–4 links back (11 edges) they saved nothing measurable, and their 4 MB (3 numbers
 * per step and one per edge) raised the peak memory of that plan, near the benchmark's bound.
 */
const RECORDS_AVERAGE = 24;

/**
 * For each query q, is `targets[q]` a (transitive) dependency of `sources[q]`? Answers 1 or 0.
 *
 * In five stages, each taking only what the one before left, for N steps, E edges, R queries:
 * 1. the direct dependencies and the topological-position test: O(N + E + R) (chains,
 *    fan-out/fan-in, references to a dependency);
 * 2. when a quarter or more of the queries left are near (the source at most `nearSpan` places
 *    after the target in the topological order), bitsets pushed along the order over short
 *    windows answer those dense enough to pay (see `answerNearQueries`): O(N + R) and at most
 *    32 words a query (random plans with dependencies and references within a window);
 * 3. a breadth-first search back from the source, without labels, entering only steps after the
 *    target in the topological order: references a few links back, even in random plans, settle
 *    here with no memory but two numbers per step (once its searches prove long, it lays the
 *    graph out in records of 3 numbers per step and one per edge, which halve their cache
 *    misses: see RECORDS_AVERAGE). Stage 3 hands the rest to stage 4 once its searches average
 *    more than PLAIN_SEARCH_AVERAGE (128) edges per query (references far back along chains) or
 *    use half the budget: at most 128 R + 8,192 + `edgesPerSearch` edges;
 * 4. labels built in O(N + E) (see `reachabilityLabels`: three depth-first forests and a path
 *    cover) that settle a query at once when they can, and otherwise the same search, entering
 *    only steps the labels leave possible and stopping at the first one they say the target surely
 *    reaches, at most `edgesPerSearch` (1,024) edges each. Skipped when FEW_QUERIES or fewer are left;
 * 5. what is left is answered by propagating bitsets along the topological order
 *    (`propagateBitsets`): O((N + E) · ⌈T / 32⌉) for T distinct targets left.
 * Stages 3 and 4 together look at no more than `edgesPerItem` (64) × (N + E + R) edges: linear.
 *
 * Exact reachability between arbitrary pairs has no known linear algorithm, so stage 5 stays for
 * graphs the labels do not capture (a wide grid with references across it is one); on the shapes
 * plans have — chains, trees, fan-out, random graphs, interleaved chains, references many hops
 * back — stages 2 to 4 settle every query within a few dozen edges and stage 5 gets little or nothing.
 */
export function answerAncestorQueries(
  graph: AncestryGraph,
  sources: ArrayLike<number>,
  targets: ArrayLike<number>,
  limits: SearchLimits = DEFAULT_LIMITS,
  work: AncestryWork = { near: 0, searched: 0, searchedEdges: 0, leftToBitsets: 0, labelled: false, recorded: false },
  spare = new SpareInts(),
): Uint8Array {
  const answers = new Uint8Array(sources.length);
  const direct = answerDirectly(graph, sources, targets, limits.nearSpan, answers, spare);
  let undecided = direct.undecided;
  if (direct.near > 0 && direct.near * NEAR_SHARE >= undecided.length) {
    const near = answerNearQueries(graph, sources, targets, undecided, limits.nearSpan, answers, spare);
    undecided = near.left;
    work.near = near.answered;
  }
  if (undecided.length === 0) return answers;
  const searches = new Searches(graph, sources, targets, answers, limits, work, spare);
  let left = searchWithoutLabels(searches, undecided);
  if (left.length > FEW_QUERIES && searches.canSearch) {
    searches.search.useLabels();
    work.labelled = true;
    left = searches.settleAll(left, limits.edgesPerSearch);
  }
  work.leftToBitsets = left.length;
  if (left.length > 0) propagateBitsets(graph, sources, targets, left, answers);
  return answers;
}

/** The searches of stages 3 and 4, answering into `answers`, within one edge budget. */
class Searches {
  readonly search: AncestorSearch;
  private budget: number;
  private readonly initialBudget: number;
  /** About what the dependency records cost to build, in edges searched: steps + edges. */
  readonly recordsCost: number;
  /** Edges looked at so far. */
  spent = 0;

  constructor(
    graph: AncestryGraph,
    private readonly sources: ArrayLike<number>,
    private readonly targets: ArrayLike<number>,
    private readonly answers: Uint8Array,
    private readonly limits: SearchLimits,
    readonly work: AncestryWork,
    spare: SpareInts,
  ) {
    this.search = new AncestorSearch(graph, spare);
    this.budget = limits.edgesPerItem * (graph.position.length + graph.dependencies.list.length + sources.length);
    this.initialBudget = this.budget;
    this.recordsCost = graph.position.length + graph.dependencies.list.length;
  }

  /** Has half the budget or more been spent? */
  get halfSpent(): boolean {
    return this.budget <= this.initialBudget / 2;
  }

  /** Is any budget left? */
  get canSearch(): boolean {
    return this.budget > 0;
  }

  /** Answers `query` unless the search gives up within `maxEdges` (and the budget); true when answered. */
  settle(query: number, maxEdges: number): boolean {
    const allowed = Math.min(maxEdges, this.limits.edgesPerSearch, this.budget);
    if (allowed <= 0) return false;
    const answer = this.search.settle(this.sources[query] as number, this.targets[query] as number, allowed);
    return this.file(query, answer, this.search.edges);
  }

  /** `settle` by a search over `records` (stage 3 once its searches prove long). */
  settleByRecords(records: DependencyRecords, query: number): boolean {
    const allowed = Math.min(this.limits.edgesPerSearch, this.budget);
    if (allowed <= 0) return false;
    const answer = records.settle(this.sources[query] as number, this.targets[query] as number, allowed, UNSETTLED);
    return this.file(query, answer, records.edges);
  }

  /** Counts a search's edges and files its answer; true when it answered. */
  private file(query: number, answer: number, edges: number): boolean {
    this.budget -= edges;
    this.spent += edges;
    this.work.searchedEdges += edges;
    if (answer === UNSETTLED) return false;
    this.answers[query] = answer;
    this.work.searched++;
    return true;
  }

  /** Tries each of `queries`; returns those not answered. */
  settleAll(queries: Int32Array, maxEdges: number): Int32Array {
    const left = new IntList(Math.min(queries.length, 1024));
    for (let index = 0; index < queries.length; index++) {
      if (!this.settle(queries[index] as number, maxEdges)) left.push(queries[index] as number);
    }
    return left.view();
  }
}

/**
 * Stage 3 (see `answerAncestorQueries`): returns the queries it leaves to the labels. Once its
 * searches prove long (see RECORDS_AVERAGE) the rest go on over the records, in a loop of their
 * own: switching the search object inside this loop cost another 15 ms at 50,000 steps.
 */
function searchWithoutLabels(searches: Searches, undecided: Int32Array): Int32Array {
  const left = new IntList(1024);
  const spentBefore = searches.spent;
  for (let index = 0; index < undecided.length; index++) {
    const query = undecided[index] as number;
    if (!searches.settle(query, Number.POSITIVE_INFINITY)) left.push(query);
    const spent = searches.spent - spentBefore;
    if (labelsPay(searches, spent, index, undecided, left)) break;
    if (spent >= searches.recordsCost && spent >= RECORDS_AVERAGE * (index + 1)) {
      searches.work.recorded = true;
      searchRecords(searches, undecided, index + 1, spentBefore, left);
      break;
    }
  }
  return left.view();
}

/** The rest of stage 3 from `first` on, over the records. */
function searchRecords(searches: Searches, undecided: Int32Array, first: number, spentBefore: number, left: IntList) {
  const records = searches.search.records();
  for (let index = first; index < undecided.length; index++) {
    const query = undecided[index] as number;
    if (!searches.settleByRecords(records, query)) left.push(query);
    if (labelsPay(searches, searches.spent - spentBefore, index, undecided, left)) break;
  }
}

/** Have stage 3's searches grown long enough for the labels? Then the queries after `index` go to `left`. */
function labelsPay(searches: Searches, spent: number, index: number, undecided: Int32Array, left: IntList): boolean {
  if (spent <= PLAIN_SEARCH_AVERAGE * (index + 1) + PLAIN_SEARCH_SLACK && !searches.halfSpent) return false;
  for (let rest = index + 1; rest < undecided.length; rest++) left.push(undecided[rest] as number);
  return true;
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
  nearSpan: number,
  answers: Uint8Array,
  spare: SpareInts,
): { undecided: Int32Array; near: number } {
  const { position, dependencies } = graph;
  const { start, list } = dependencies;
  // Sized for every query at once: growing would copy.
  const undecided = new IntList(sources.length, spare);
  // marked[slot] === source + 1 ⇔ slot is a direct dependency of `source` (long lists only).
  let marked: Int32Array | undefined;
  let markedFor = -1;
  let near = 0;
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
    const span = (position[source] as number) - (position[target] as number);
    if (direct) answers[query] = 1;
    else if (span > 0) {
      undecided.push(query);
      if (span <= nearSpan) near++;
    }
  }
  return { undecided: undecided.view(), near };
}

/** Dependency lists longer than this are marked in an array rather than scanned per query. */
const LONG_LIST = 16;
