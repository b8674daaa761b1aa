import { ErrorCodes } from '../errors.js';
import { IntList } from './int-list.js';
import { SpareInts } from './spare-ints.js';
import { StepIdTable } from './step-id-table.js';
import type { AddProblem } from './validate-plan.js';

/**
 * The plan's steps that have a string id (first occurrence wins), numbered by slot. Nothing per
 * step is made (an object each was 13 MB held for the whole validation at 200,000 steps): the
 * plan's own `steps` array serves when every step has a slot of its own, as it has in a valid plan.
 */
export interface CollectedSteps {
  /** The step object as given (its `id`, `tool`, `args`, `dependsOn` are read from it; `id` is a string). */
  readonly raw: readonly Record<string, unknown>[];
  /** Position of each slot's step in the plan's `steps` array (for JSON paths); none when it is the slot itself. */
  readonly planIndex: Int32Array | undefined;
  readonly slotById: StepIdTable;
}

/**
 * Dependencies in compressed form: slot s depends on `list[start[s] .. start[s + 1] - 1]`, each
 * once, in `dependsOn` order. Two typed arrays instead of an array per step: no per-step objects
 * for the collector, and a walk over one step's dependencies reads adjacent memory.
 */
export interface Adjacency {
  readonly start: Int32Array;
  readonly list: Int32Array;
}

/** The dependency graph in index form (duplicate ids dropped). */
export interface DependencyIndex extends CollectedSteps {
  readonly dependencies: Adjacency;
}

/** A topological order of a dependency graph, when it has one. */
export interface TopologicalOrder {
  /** False when there is a cycle. */
  readonly acyclic: boolean;
  /** Each slot's place in the order, ready steps leaving in plan order (meaningful only when acyclic). */
  readonly position: Int32Array;
}

/** An acyclic dependency graph with its topological order (see `topologicalOrder`). */
export interface AncestryGraph {
  readonly position: Int32Array;
  readonly dependencies: Adjacency;
}

/** The slots in topological order (the inverse of `position`), for the few who walk the order. */
export function slotsInOrder(position: Int32Array): Int32Array {
  const order = new Int32Array(position.length);
  for (let slot = 0; slot < position.length; slot++) order[position[slot] as number] = slot;
  return order;
}

/** Lists up to this long are searched for repeats in place; longer ones use a stamp per slot. */
const SHORT_LIST = 16;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The steps that have a string id, first occurrence wins; later duplicates are reported. */
export function collectSteps(rawSteps: readonly unknown[], add: AddProblem): CollectedSteps {
  // While every step so far has a slot of its own, the plan's array serves as `raw` and slot and
  // index coincide: copies of the array and an index per step are made only once a step is left out.
  let raw: Record<string, unknown>[] | undefined;
  let planIndex: Int32Array | undefined;
  const slotById = new StepIdTable(rawSteps.length);
  let count = 0;
  for (let index = 0; index < rawSteps.length; index++) {
    const step: unknown = rawSteps[index];
    const hasId = isObject(step) && typeof step.id === 'string';
    const slot = hasId ? slotById.intern(step.id as string) : -1;
    if (slot !== count) {
      if (!raw || !planIndex) {
        raw = rawSteps.slice(0, count) as Record<string, unknown>[];
        planIndex = new Int32Array(rawSteps.length);
        for (let kept = 0; kept < count; kept++) planIndex[kept] = kept;
      }
      if (hasId) {
        add(
          ErrorCodes.PLAN_INVALID,
          'duplicate-step-id',
          `/steps/${index}/id`,
          `step id "${step.id}" is already used by /steps/${planIndex[slot]}`,
        );
      }
      continue;
    }
    if (raw && planIndex) {
      raw.push(step as Record<string, unknown>);
      planIndex[count] = index;
    }
    count++;
  }
  return { raw: raw ?? (rawSteps as Record<string, unknown>[]), planIndex: planIndex?.subarray(0, count), slotById };
}

/** The id of slot `slot`'s step. */
export function idOf(steps: CollectedSteps, slot: number): string {
  return (steps.raw[slot] as Record<string, unknown>).id as string;
}

/** Where slot `slot`'s step is in the plan's `steps` array. */
export function planIndexOf(steps: CollectedSteps, slot: number): number {
  return steps.planIndex ? (steps.planIndex[slot] as number) : slot;
}

/** A step's `dependsOn` when it is an array (anything else is the schema's problem). */
function dependsOnOf(step: Record<string, unknown>): readonly unknown[] {
  const dependsOn = step.dependsOn;
  return Array.isArray(dependsOn) ? dependsOn : [];
}

/**
 * Resolves `dependsOn` ids to slots, reporting unknown ids (and, for the sequential engine, a
 * dependency listed later in the plan). Repeats are dropped: a short list is searched in place,
 * a long one with a stamp per slot, so a join step depending on 100,000 steps costs 100,000
 * lookups, not their square, and the common short list touches no array indexed by slot.
 */
export function linkDependencies(steps: CollectedSteps, engine: string, add: AddProblem): Adjacency {
  const { raw, slotById } = steps;
  const start = new Int32Array(raw.length + 1);
  const list = new IntList(2 * raw.length);
  // seen[slot] === current + 1 ⇔ slot is already a dependency of `current`; never needs clearing.
  let seen: Int32Array | undefined;
  for (let current = 0; current < raw.length; current++) {
    const dependsOn = dependsOnOf(raw[current] as Record<string, unknown>);
    const first = list.length;
    const stamped = dependsOn.length > SHORT_LIST;
    if (stamped) seen ??= new Int32Array(raw.length);
    for (let position = 0; position < dependsOn.length; position++) {
      const dependency = dependsOn[position];
      if (typeof dependency !== 'string') continue;
      const slot = slotById.slotOf(dependency);
      if (slot === -1 || (engine === 'sequential' && slot > current)) {
        reportDependency(steps, current, position, dependency, slot === -1, add);
        if (slot === -1) continue;
      }
      if (stamped) {
        if ((seen as Int32Array)[slot] === current + 1) continue;
        (seen as Int32Array)[slot] = current + 1;
      } else if (list.includesFrom(first, slot)) {
        continue;
      }
      list.push(slot);
    }
    start[current + 1] = list.length;
  }
  return { start, list: list.view() };
}

function reportDependency(
  steps: CollectedSteps,
  slot: number,
  position: number,
  dependency: string,
  unknown: boolean,
  add: AddProblem,
): void {
  const path = `/steps/${planIndexOf(steps, slot)}/dependsOn/${position}`;
  const id = idOf(steps, slot);
  if (unknown) {
    add(
      ErrorCodes.PLAN_INVALID,
      'unknown-dependency',
      path,
      `step "${id}" depends on "${dependency}", which is not a step of this plan`,
    );
  } else {
    // Strict runs steps in array order: a dependency listed later would run after its dependent.
    add(
      ErrorCodes.PLAN_INVALID,
      'dependency-order',
      path,
      `step "${id}" depends on "${dependency}", which comes later in the plan; the sequential engine runs steps in array order, so move "${dependency}" above it`,
    );
  }
}

/**
 * The reverse of `dependencies`: each slot's dependents, in plan order. O(steps + edges).
 * `cursors` (one number per step) is scratch the caller has spare.
 */
export function reverseAdjacency(
  dependencies: Adjacency,
  cursors = new Int32Array(dependencies.start.length - 1),
): Adjacency {
  const { start, list } = dependencies;
  const count = start.length - 1;
  const reverseStart = new Int32Array(count + 1);
  for (let edge = 0; edge < list.length; edge++) {
    const dependency = list[edge] as number;
    reverseStart[dependency + 1] = (reverseStart[dependency + 1] as number) + 1;
  }
  for (let slot = 0; slot < count; slot++) {
    reverseStart[slot + 1] = (reverseStart[slot + 1] as number) + (reverseStart[slot] as number);
    cursors[slot] = reverseStart[slot] as number;
  }
  const reverseList = new Int32Array(list.length);
  for (let slot = 0; slot < count; slot++) {
    for (let edge = start[slot] as number; edge < (start[slot + 1] as number); edge++) {
      const dependency = list[edge] as number;
      reverseList[cursors[dependency] as number] = slot;
      cursors[dependency] = (cursors[dependency] as number) + 1;
    }
  }
  return { start: reverseStart, list: reverseList };
}

/**
 * Kahn's algorithm over index arrays: O(steps + edges), ready steps leave in plan order.
 * (graphology was ~10× slower here at 100,000 steps; it backs `planGraph` for callers who
 * want a graph object.) The queue is the scratch of the reversal until it fills, a step's
 * `position` counts its dependencies not yet ordered until it has one, and the queue and the
 * dependents go to `spare` once sorted (`slotsInOrder` and the labels rebuild what they need).
 */
export function topologicalOrder(dependencies: Adjacency, spare = new SpareInts()): TopologicalOrder {
  const count = dependencies.start.length - 1;
  const order = new Int32Array(count);
  const { start, list } = reverseAdjacency(dependencies, order);
  const position = new Int32Array(count);
  let tail = 0;
  for (let slot = 0; slot < count; slot++) {
    position[slot] = (dependencies.start[slot + 1] as number) - (dependencies.start[slot] as number);
    if (position[slot] === 0) order[tail++] = slot;
  }
  for (let head = 0; head < tail; head++) {
    const current = order[head] as number;
    position[current] = head;
    for (let edge = start[current] as number; edge < (start[current + 1] as number); edge++) {
      const next = list[edge] as number;
      position[next] = (position[next] as number) - 1;
      if (position[next] === 0) order[tail++] = next;
    }
  }
  spare.give(order, start, list);
  return { acyclic: tail === count, position };
}
