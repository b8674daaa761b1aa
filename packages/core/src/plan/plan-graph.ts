import { DirectedGraph } from 'graphology';
import { topologicalGenerations } from 'graphology-dag';
import type { Plan } from './plan-schema.js';

/**
 * The plan as a graphology graph (edges dependency → dependent; node attributes are the steps).
 * Node keys are `#<index>` because graphology keeps keys in plain objects.
 */
export function planGraph(plan: Plan): DirectedGraph {
  const graph = new DirectedGraph();
  const keyOf = new Map(plan.steps.map((step, index) => [step.id, `#${index}`]));
  for (const step of plan.steps) graph.addNode(keyOf.get(step.id) as string, { ...step });
  for (const step of plan.steps) {
    for (const dependency of step.dependsOn ?? []) {
      const source = keyOf.get(dependency);
      const target = keyOf.get(step.id) as string;
      if (source && !graph.hasDirectedEdge(source, target)) graph.addDirectedEdge(source, target);
    }
  }
  return graph;
}

/**
 * Steps by depth: generation n holds the steps whose longest dependency chain has n links.
 * What a layered drawing of the plan (`stepwise graph`, the HTML report) needs. Plan must be acyclic.
 */
export function planGenerations(plan: Plan): string[][] {
  const graph = planGraph(plan);
  return topologicalGenerations(graph).map((generation) =>
    generation.map((key) => graph.getNodeAttribute(key, 'id') as string),
  );
}
