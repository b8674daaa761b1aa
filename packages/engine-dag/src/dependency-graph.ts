import { findReferences, type Plan } from '@stepwise/core';

/**
 * The plan as the scheduler sees it: steps by plan index, each with its dependencies and
 * dependents as index lists. Dependents are kept in plan order, so enqueueing them in list
 * order is already the tie-break the engine promises.
 */
export interface DependencyGraph {
  readonly ids: readonly string[];
  readonly indexById: ReadonlyMap<string, number>;
  readonly dependencies: readonly (readonly number[])[];
  readonly dependents: readonly (readonly number[])[];
  /** Step ids each step's own args reference (`$ref` and `"$id"`), known before the run. */
  readonly references: readonly (readonly string[])[];
  /** A topological order (Kahn, ties by plan index). */
  readonly order: readonly number[];
}

/** Builds the graph of an already validated plan (ids unique, dependencies known, no cycle). */
export function buildDependencyGraph(plan: Plan): DependencyGraph {
  const ids = plan.steps.map((step) => step.id);
  const indexById = new Map(ids.map((id, index) => [id, index]));
  const dependencies: number[][] = [];
  const dependents: number[][] = ids.map(() => []);
  const references: string[][] = [];
  for (const [index, step] of plan.steps.entries()) {
    const own = new Set<number>();
    for (const dependency of step.dependsOn ?? []) {
      const at = indexById.get(dependency);
      if (at !== undefined && at !== index) own.add(at);
    }
    dependencies.push([...own]);
    for (const at of own) dependents[at]?.push(index);
    references.push(step.args ? [...new Set(findReferences(step.args).map((reference) => reference.stepId))] : []);
  }
  return { ids, indexById, dependencies, dependents, references, order: topologicalOrder(dependencies, dependents) };
}

function topologicalOrder(
  dependencies: readonly (readonly number[])[],
  dependents: readonly (readonly number[])[],
): number[] {
  const remaining = dependencies.map((list) => list.length);
  const order: number[] = [];
  for (const [index, count] of remaining.entries()) if (count === 0) order.push(index);
  for (let head = 0; head < order.length; head++) {
    for (const next of dependents[order[head] as number] ?? []) {
      const left = (remaining[next] as number) - 1;
      remaining[next] = left;
      if (left === 0) order.push(next);
    }
  }
  return order;
}
