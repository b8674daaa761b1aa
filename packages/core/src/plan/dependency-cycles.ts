import { ErrorCodes } from '../errors.js';
import { type DependencyIndex, idOf, planIndexOf } from './dependency-index.js';
import type { AddProblem } from './validate-plan.js';

/** Reports one `dependency-cycle` problem per cycle, naming its members in execution order. */
export function reportCycles(index: DependencyIndex, add: AddProblem): void {
  const { slotById, dependencies } = index;
  const { start, list } = dependencies;
  const ids = index.raw.map((_, slot) => idOf(index, slot));
  const byId = new Map(
    ids.map((id, slot) => [id, Array.from(list.subarray(start[slot], start[slot + 1]), (d) => ids[d] as string)]),
  );
  for (const cycle of findCycles(ids, byId)) {
    const first = planIndexOf(index, Math.max(0, slotById.slotOf(cycle[0] as string)));
    add(
      ErrorCodes.PLAN_INVALID,
      'dependency-cycle',
      `/steps/${first}/dependsOn`,
      `dependency cycle: ${[...cycle, cycle[0]].join(' → ')}`,
    );
  }
}

/**
 * One cycle per strongly connected component (Tarjan, iterative), its members in
 * dependency order starting from the component's first step in the plan.
 */
function findCycles(ids: readonly string[], dependencies: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const root of ids) {
    if (index.has(root)) continue;
    const work: { id: string; next: number }[] = [{ id: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { id: string; next: number };
      const edges = dependencies.get(frame.id) ?? [];
      if (frame.next < edges.length) {
        const target = edges[frame.next++] as string;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ id: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.id, Math.min(low.get(frame.id) as number, index.get(target) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id) as number, low.get(frame.id) as number));
      if (low.get(frame.id) === index.get(frame.id)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.id);
        const selfLoop = (dependencies.get(frame.id) ?? []).includes(frame.id);
        if (component.length > 1 || selfLoop) components.push(component);
      }
    }
  }
  const planOrder = new Map(ids.map((id, position) => [id, position]));
  return components.map((component) => cyclePath(component, dependencies, planOrder));
}

/** Shortest walk from the component's first step back to itself, following dependents. */
function cyclePath(
  component: readonly string[],
  dependencies: ReadonlyMap<string, readonly string[]>,
  planOrder: ReadonlyMap<string, number>,
): string[] {
  const members = new Set(component);
  const start = [...component].sort((a, b) => (planOrder.get(a) ?? 0) - (planOrder.get(b) ?? 0))[0] as string;
  // Edges point dependency → dependent; walk dependents so the cycle reads in execution order.
  const dependents = new Map<string, string[]>();
  for (const id of component) {
    for (const dependency of dependencies.get(id) ?? []) {
      if (!members.has(dependency)) continue;
      const list = dependents.get(dependency) ?? [];
      list.push(id);
      dependents.set(dependency, list);
    }
  }
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const current = queue[head] as string;
    for (const next of dependents.get(current) ?? []) {
      if (next === start) {
        const path = [current];
        while (path[0] !== start) path.unshift(previous.get(path[0] as string) as string);
        return path;
      }
      if (!previous.has(next)) {
        previous.set(next, current);
        queue.push(next);
      }
    }
  }
  return [start];
}
