import { ErrorCodes } from '../errors.js';
import type { AddProblem } from './validate-plan.js';

/** A step as validation sees it: whatever the input had, before the schema is trusted. */
export interface StepShape {
  /** Position in the plan's `steps` array (for JSON paths). */
  readonly index: number;
  readonly id: string;
  readonly tool: unknown;
  readonly args: unknown;
  readonly dependsOn: readonly unknown[];
}

/** The dependency graph in index form: slot = position in `steps` (duplicate ids dropped). */
export interface DependencyIndex {
  readonly steps: readonly StepShape[];
  readonly slotById: ReadonlyMap<string, number>;
  /** Known dependencies of each slot, each listed once, in `dependsOn` order. */
  readonly dependencies: readonly (readonly number[])[];
}

/** A topological order of a dependency index, when it has one. */
export interface TopologicalOrder {
  /** Slots in topological order; ready steps leave in plan order. `undefined` when there is a cycle. */
  readonly order: readonly number[] | undefined;
  /** Index of each slot in `order` (meaningful only when `order` is defined). */
  readonly position: Int32Array;
  /** Slots that depend on slot s: `dependents[dependentsStart[s] .. dependentsStart[s + 1] - 1]`, in plan order. */
  readonly dependents: Int32Array;
  readonly dependentsStart: Int32Array;
}

/** An acyclic dependency graph with its topological order (see `topologicalOrder`). */
export interface AncestryGraph extends TopologicalOrder {
  readonly order: readonly number[];
  readonly dependencies: readonly (readonly number[])[];
}

/** Shared by every step without dependencies; never written to. */
const NO_SLOTS: number[] = [];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The steps that have a string id, first occurrence wins; later duplicates are reported. */
export function collectSteps(
  rawSteps: readonly unknown[],
  add: AddProblem,
): Pick<DependencyIndex, 'steps' | 'slotById'> {
  const steps: StepShape[] = [];
  const slotById = new Map<string, number>();
  for (let index = 0; index < rawSteps.length; index++) {
    const raw: unknown = rawSteps[index];
    if (!isObject(raw) || typeof raw.id !== 'string') continue;
    const existing = slotById.get(raw.id);
    if (existing !== undefined) {
      add(
        ErrorCodes.PLAN_INVALID,
        'duplicate-step-id',
        `/steps/${index}/id`,
        `step id "${raw.id}" is already used by /steps/${steps[existing]?.index}`,
      );
      continue;
    }
    slotById.set(raw.id, steps.length);
    steps.push({
      index,
      id: raw.id,
      tool: raw.tool,
      args: raw.args,
      dependsOn: Array.isArray(raw.dependsOn) ? raw.dependsOn : [],
    });
  }
  return { steps, slotById };
}

/**
 * Resolves `dependsOn` ids to slots, reporting unknown ids (and, for the sequential engine, a
 * dependency listed later in the plan). Repeated ids are dropped with a stamp per slot: O(1) per
 * entry, so a join step depending on 100,000 steps costs 100,000 lookups, not their square.
 */
export function linkDependencies(
  steps: readonly StepShape[],
  slotById: ReadonlyMap<string, number>,
  engine: string,
  add: AddProblem,
): number[][] {
  const dependencies: number[][] = [];
  // seen[slot] === current + 1 ⇔ slot is already a dependency of `current`; never needs clearing.
  const seen = new Int32Array(steps.length);
  for (let current = 0; current < steps.length; current++) {
    const step = steps[current] as StepShape;
    const own: number[] = [];
    for (let position = 0; position < step.dependsOn.length; position++) {
      const dependency = step.dependsOn[position];
      if (typeof dependency !== 'string') continue;
      const slot = slotById.get(dependency);
      if (slot === undefined) {
        add(
          ErrorCodes.PLAN_INVALID,
          'unknown-dependency',
          `/steps/${step.index}/dependsOn/${position}`,
          `step "${step.id}" depends on "${dependency}", which is not a step of this plan`,
        );
        continue;
      }
      if (engine === 'sequential' && slot > current) {
        // Strict runs steps in array order: a dependency listed later would run after its dependent.
        add(
          ErrorCodes.PLAN_INVALID,
          'dependency-order',
          `/steps/${step.index}/dependsOn/${position}`,
          `step "${step.id}" depends on "${dependency}", which comes later in the plan; the sequential engine runs steps in array order, so move "${dependency}" above it`,
        );
      }
      if (seen[slot] === current + 1) continue;
      seen[slot] = current + 1;
      own.push(slot);
    }
    // Exact size: a list grown by push keeps room for 16 entries, about 18 MB for 100,000 steps
    // that live as long as validation does.
    dependencies.push(own.length === 0 ? NO_SLOTS : own.slice());
  }
  return dependencies;
}

/**
 * Kahn's algorithm over index arrays: O(steps + edges), ready steps leave in plan order.
 * (graphology was ~10× slower here at 100,000 steps; it backs `planGraph` for callers who
 * want a graph object.) Dependents are kept in two typed arrays, not an array per step.
 */
export function topologicalOrder(dependencies: readonly (readonly number[])[]): TopologicalOrder {
  const count = dependencies.length;
  const remaining = new Int32Array(count);
  const dependentsStart = new Int32Array(count + 1);
  for (let slot = 0; slot < count; slot++) {
    const own = dependencies[slot] as readonly number[];
    remaining[slot] = own.length;
    for (const dependency of own) dependentsStart[dependency + 1] = (dependentsStart[dependency + 1] as number) + 1;
  }
  for (let slot = 0; slot < count; slot++) {
    dependentsStart[slot + 1] = (dependentsStart[slot + 1] as number) + (dependentsStart[slot] as number);
  }
  const dependents = new Int32Array(dependentsStart[count] as number);
  const fill = dependentsStart.slice(0, count);
  for (let slot = 0; slot < count; slot++) {
    for (const dependency of dependencies[slot] as readonly number[]) {
      dependents[fill[dependency] as number] = slot;
      fill[dependency] = (fill[dependency] as number) + 1;
    }
  }
  const position = new Int32Array(count);
  const queue: number[] = [];
  for (let slot = 0; slot < count; slot++) if (remaining[slot] === 0) queue.push(slot);
  for (let head = 0; head < queue.length; head++) {
    const current = queue[head] as number;
    position[current] = head;
    for (let edge = dependentsStart[current] as number; edge < (dependentsStart[current + 1] as number); edge++) {
      const next = dependents[edge] as number;
      remaining[next] = (remaining[next] as number) - 1;
      if (remaining[next] === 0) queue.push(next);
    }
  }
  return { order: queue.length === count ? queue : undefined, position, dependents, dependentsStart };
}
