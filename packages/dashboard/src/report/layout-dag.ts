/** A node of the laid-out graph; `virtual` nodes carry long edges across layers. */
export interface LayoutNode {
  readonly id: string;
  readonly layer: number;
  readonly order: number;
  readonly x: number;
  readonly y: number;
  readonly virtual: boolean;
}

/** An edge as a polyline through the virtual nodes of its route. */
export interface LayoutEdge {
  readonly from: string;
  readonly to: string;
  readonly points: readonly { readonly x: number; readonly y: number }[];
}

export interface DagLayout {
  /** Real nodes by id. */
  readonly nodes: ReadonlyMap<string, LayoutNode>;
  readonly edges: readonly LayoutEdge[];
  readonly width: number;
  readonly height: number;
}

export interface LayoutOptions {
  readonly nodeWidth?: number;
  readonly nodeHeight?: number;
  /** Horizontal space between layers. */
  readonly layerGap?: number;
  /** Vertical space between nodes of one layer. */
  readonly rowGap?: number;
  readonly margin?: number;
  /** Barycenter sweeps (down then up) to reduce crossings. */
  readonly sweeps?: number;
}

interface WorkNode {
  readonly id: string;
  readonly virtual: boolean;
  layer: number;
  position: number;
  readonly up: WorkNode[];
  readonly down: WorkNode[];
}

type Route = { from: string; to: string; chain: WorkNode[] };

/** Longest-path layering in topological order (Kahn), so a node sits right of all its dependencies. */
function assignLayers(
  ids: readonly string[],
  dependencies: ReadonlyMap<string, readonly string[]>,
  work: Map<string, WorkNode>,
): void {
  const indegree = new Map<string, number>();
  const dependents = new Map<string, string[]>();
  for (const id of ids) {
    const own = (dependencies.get(id) ?? []).filter((dependency) => work.has(dependency) && dependency !== id);
    indegree.set(id, own.length);
    for (const dependency of own) {
      const list = dependents.get(dependency) ?? [];
      list.push(id);
      dependents.set(dependency, list);
    }
  }
  const queue = ids.filter((id) => indegree.get(id) === 0);
  for (let head = 0; head < queue.length; head++) {
    const id = queue[head] as string;
    const node = work.get(id) as WorkNode;
    for (const next of dependents.get(id) ?? []) {
      const target = work.get(next) as WorkNode;
      target.layer = Math.max(target.layer, node.layer + 1);
      const remaining = (indegree.get(next) as number) - 1;
      indegree.set(next, remaining);
      if (remaining === 0) queue.push(next);
    }
  }
}

/** Edges, split by virtual nodes where they skip layers. */
function routeEdges(
  ids: readonly string[],
  dependencies: ReadonlyMap<string, readonly string[]>,
  work: Map<string, WorkNode>,
): Route[] {
  const routes: Route[] = [];
  let virtualCount = 0;
  for (const id of ids) {
    const target = work.get(id) as WorkNode;
    for (const dependency of new Set(dependencies.get(id) ?? [])) {
      const source = work.get(dependency);
      if (!source || source === target) continue;
      const chain: WorkNode[] = [source];
      for (let layer = source.layer + 1; layer < target.layer; layer++) {
        const virtual: WorkNode = {
          id: `\u0000v${virtualCount++}`,
          virtual: true,
          layer,
          position: 0,
          up: [],
          down: [],
        };
        work.set(virtual.id, virtual);
        chain.push(virtual);
      }
      chain.push(target);
      for (let index = 1; index < chain.length; index++) {
        (chain[index - 1] as WorkNode).down.push(chain[index] as WorkNode);
        (chain[index] as WorkNode).up.push(chain[index - 1] as WorkNode);
      }
      routes.push({ from: dependency, to: id, chain });
    }
  }
  return routes;
}

/** Nodes per layer, ordered by barycenter sweeps (down, then up) to reduce crossings. */
function orderLayers(work: ReadonlyMap<string, WorkNode>, sweeps: number): WorkNode[][] {
  const layers: WorkNode[][] = [];
  for (const node of work.values()) {
    const layer = layers[node.layer] ?? [];
    layer.push(node);
    layers[node.layer] = layer;
  }
  for (const layer of layers) for (const [index, node] of (layer ?? []).entries()) node.position = index;
  const reorder = (layer: WorkNode[], neighbours: (node: WorkNode) => WorkNode[]) => {
    const keyed = layer.map((node) => {
      const around = neighbours(node);
      const key =
        around.length === 0
          ? node.position
          : around.reduce((sum, neighbour) => sum + neighbour.position, 0) / around.length;
      return { node, key };
    });
    keyed.sort((a, b) => a.key - b.key || a.node.position - b.node.position);
    for (const [index, entry] of keyed.entries()) entry.node.position = index;
    layer.splice(0, layer.length, ...keyed.map((entry) => entry.node));
  };
  for (let sweep = 0; sweep < sweeps; sweep++) {
    if (sweep % 2 === 0)
      for (let index = 1; index < layers.length; index++) reorder(layers[index] ?? [], (node) => node.up);
    else for (let index = layers.length - 2; index >= 0; index--) reorder(layers[index] ?? [], (node) => node.down);
  }
  return layers;
}

/**
 * A layered (Sugiyama-style) left-to-right layout: longest-path layering, virtual nodes on
 * edges that span several layers, barycenter ordering sweeps, then coordinates. Linear-ish in
 * nodes + edges per sweep. Nodes are given in plan order (the tie-breaker); edges must form a DAG.
 */
export function layoutDag(
  ids: readonly string[],
  dependencies: ReadonlyMap<string, readonly string[]>,
  options: LayoutOptions = {},
): DagLayout {
  const nodeWidth = options.nodeWidth ?? 168;
  const nodeHeight = options.nodeHeight ?? 46;
  const layerGap = options.layerGap ?? 64;
  const rowGap = options.rowGap ?? 18;
  const margin = options.margin ?? 16;

  const work = new Map<string, WorkNode>();
  for (const id of ids) work.set(id, { id, virtual: false, layer: 0, position: 0, up: [], down: [] });
  assignLayers(ids, dependencies, work);
  const routes = routeEdges(ids, dependencies, work);
  const layers = orderLayers(work, options.sweeps ?? 6);

  let tallest = 1;
  for (const layer of layers) tallest = Math.max(tallest, layer?.length ?? 0);
  const height = margin * 2 + tallest * nodeHeight + (tallest - 1) * rowGap;
  const width = margin * 2 + layers.length * nodeWidth + Math.max(0, layers.length - 1) * layerGap;
  const coordinates = new Map<string, { x: number; y: number }>();
  for (const [layerIndex, layer] of layers.entries()) {
    if (!layer) continue;
    const columnHeight = layer.length * nodeHeight + (layer.length - 1) * rowGap;
    const top = margin + (height - margin * 2 - columnHeight) / 2;
    for (const node of layer) {
      coordinates.set(node.id, {
        x: margin + layerIndex * (nodeWidth + layerGap),
        y: top + node.position * (nodeHeight + rowGap),
      });
    }
  }

  const nodes = new Map<string, LayoutNode>();
  for (const id of ids) {
    const node = work.get(id) as WorkNode;
    const at = coordinates.get(id) as { x: number; y: number };
    nodes.set(id, { id, layer: node.layer, order: node.position, x: at.x, y: at.y, virtual: false });
  }
  const edges = routes.map((route) => ({
    from: route.from,
    to: route.to,
    points: route.chain.map((node, index) => {
      const at = coordinates.get(node.id) as { x: number; y: number };
      const middleY = at.y + nodeHeight / 2;
      if (index === 0) return { x: at.x + nodeWidth, y: middleY };
      if (index === route.chain.length - 1) return { x: at.x, y: middleY };
      return { x: at.x + nodeWidth / 2, y: middleY };
    }),
  }));
  return { nodes, edges, width, height };
}
