// The validatePlan of @stepwise/core 0.1.0, frozen as the oracle of validate-plan-regression.test.ts:
// the linear rewrite must report exactly the problems this one reported, in the same order.
// Quadratic on wide fan-outs and far-back references; only ever run on small plans.
import { ErrorCodes } from '../src/errors.js';
import { PlanSchema } from '../src/plan/plan-schema.js';
import { findReferences, type Reference } from '../src/plan/references.js';
import type { PlanProblem, PlanValidation, ProblemKind, ValidatePlanOptions } from '../src/plan/validate-plan.js';
import { compileSchema } from '../src/tools/schema.js';

interface StepShape {
  readonly index: number;
  readonly id: string;
  readonly tool: unknown;
  readonly args: unknown;
  readonly dependsOn: readonly unknown[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function schemaPath(path: readonly PropertyKey[]): string {
  return path.map((segment) => `/${String(segment).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/**
 * Checks a plan and returns every problem found, never throwing for bad input.
 * Linear in the plan's size (steps are numbered and the graph kept in index arrays)
 * except for the reference check, which walks ancestors pruned by topological position.
 */
export function validatePlanBefore(input: unknown, options: ValidatePlanOptions = {}): PlanValidation {
  const problems: PlanProblem[] = [];
  const engine = options.engine ?? 'dag';
  const add = (code: string, kind: ProblemKind, path: string, message: string) =>
    problems.push({ code, kind, path, message });

  const parsed = PlanSchema.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      add(ErrorCodes.PLAN_INVALID, 'schema', schemaPath(issue.path), issue.message);
    }
  }
  const rawSteps = isObject(input) && Array.isArray(input.steps) ? input.steps : [];

  // Structure checks run on whatever steps have an id, so one bad field does not hide the rest.
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

  const graph: Graph = { steps, slotById, dependencies: [], position: new Int32Array(steps.length) };
  for (const step of steps) {
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
      } else {
        if (engine === 'sequential' && slot > graph.dependencies.length) {
          // Strict runs steps in array order: a dependency listed later would run after its dependent.
          add(
            ErrorCodes.PLAN_INVALID,
            'dependency-order',
            `/steps/${step.index}/dependsOn/${position}`,
            `step "${step.id}" depends on "${dependency}", which comes later in the plan; the sequential engine runs steps in array order, so move "${dependency}" above it`,
          );
        }
        if (!own.includes(slot)) own.push(slot);
      }
    }
    graph.dependencies.push(own);
  }

  const order = topologicalOrder(graph);
  if (!order) {
    const byId = new Map(
      steps.map((step, slot) => [step.id, (graph.dependencies[slot] ?? []).map((d) => steps[d]?.id as string)]),
    );
    for (const cycle of findCycles(steps, byId)) {
      const first = steps[slotById.get(cycle[0] as string) ?? 0]?.index ?? 0;
      add(
        ErrorCodes.PLAN_INVALID,
        'dependency-cycle',
        `/steps/${first}/dependsOn`,
        `dependency cycle: ${[...cycle, cycle[0]].join(' → ')}`,
      );
    }
  }

  for (let slot = 0; slot < steps.length; slot++) {
    const step = steps[slot] as StepShape;
    const base = `/steps/${step.index}`;
    if (step.tool === undefined) {
      if (engine !== 'agentic') {
        add(ErrorCodes.PLAN_INVALID, 'missing-tool', `${base}/tool`, `step "${step.id}" names no tool`);
      }
    } else if (typeof step.tool === 'string' && options.tools && !options.tools.has(step.tool)) {
      add(
        ErrorCodes.TOOL_UNKNOWN,
        'unknown-tool',
        `${base}/tool`,
        `tool "${step.tool}" is not registered (the whitelist has ${options.tools.list().length} tools)`,
      );
    }

    const references = isObject(step.args) ? findReferences(step.args) : [];
    for (const reference of references) checkReference(slot, reference, base, engine, graph, order !== undefined, add);

    const tool = typeof step.tool === 'string' ? options.tools?.get(step.tool) : undefined;
    if (tool && (step.args === undefined || isObject(step.args))) {
      const result = compileSchema(tool.input).validate(step.args ?? {});
      if (!(result instanceof Promise) && !result.ok) {
        // A reference stands for a value only known at run time: its location is not checked.
        const resolvedLater = references.map((reference) => reference.path);
        for (const issue of result.issues) {
          if (resolvedLater.some((path) => issue.path === path || issue.path.startsWith(`${path}/`))) continue;
          add(
            ErrorCodes.ARGUMENTS_INVALID,
            'invalid-args',
            `${base}/args${issue.path}`,
            `${tool.name}: ${issue.message}`,
          );
        }
      }
    }
  }

  if (problems.length === 0 && parsed.success && order) {
    return { ok: true, plan: parsed.data, problems: [], order: order.map((slot) => steps[slot]?.id as string) };
  }
  return { ok: false, plan: parsed.success ? parsed.data : undefined, problems };
}

/** The dependency graph in index form: slot = position in `steps`. */
interface Graph {
  readonly steps: readonly StepShape[];
  readonly slotById: ReadonlyMap<string, number>;
  readonly dependencies: number[][];
  /** Topological position of each slot (valid when the graph is acyclic). */
  readonly position: Int32Array;
}

function checkReference(
  slot: number,
  reference: Reference,
  base: string,
  engine: string,
  graph: Graph,
  acyclic: boolean,
  add: (code: string, kind: ProblemKind, path: string, message: string) => void,
): void {
  const path = `${base}/args${reference.path}`;
  const target = graph.slotById.get(reference.stepId);
  if (engine === 'sequential') {
    // Strict passes arguments as written; a "$word" that names no step is just text.
    if (reference.form === 'object' || target !== undefined) {
      add(
        ErrorCodes.PLAN_INVALID,
        'reference-forbidden',
        path,
        `the sequential engine passes arguments exactly as written; remove the reference to "${reference.stepId}"`,
      );
    }
    return;
  }
  if (target === undefined) {
    add(
      ErrorCodes.PLAN_INVALID,
      'reference-unknown-step',
      path,
      reference.form === 'string'
        ? `"$${reference.stepId}" references no step; write "$$${reference.stepId}" for a literal dollar`
        : `reference to unknown step "${reference.stepId}"`,
    );
    return;
  }
  // In a cyclic plan the cycle is already reported; ancestry is not well defined there.
  if (acyclic && !isAncestor(target, slot, graph)) {
    add(
      ErrorCodes.PLAN_INVALID,
      'reference-not-dependency',
      path,
      `step "${graph.steps[slot]?.id}" uses the output of "${reference.stepId}" but does not depend on it (add it to dependsOn)`,
    );
  }
}

let visitMarks = new Int32Array(0);
let visitStamp = 0;

/** Is `ancestor` reachable backwards from `slot`? Steps placed before `ancestor` in topological order are pruned. */
function isAncestor(ancestor: number, slot: number, graph: Graph): boolean {
  if (ancestor === slot) return false;
  const direct = graph.dependencies[slot] ?? [];
  if (direct.includes(ancestor)) return true;
  if (visitMarks.length < graph.steps.length) visitMarks = new Int32Array(graph.steps.length);
  const stamp = ++visitStamp;
  const floor = graph.position[ancestor] as number;
  const stack = [...direct];
  while (stack.length > 0) {
    const current = stack.pop() as number;
    if (current === ancestor) return true;
    if (visitMarks[current] === stamp || (graph.position[current] as number) < floor) continue;
    visitMarks[current] = stamp;
    for (const next of graph.dependencies[current] ?? []) stack.push(next);
  }
  return false;
}

/**
 * Kahn's algorithm over index arrays: linear, ready steps leave in plan order; fills
 * `graph.position`. `undefined` when there is a cycle. (graphology was ~10× slower here at
 * 100,000 steps; it backs `planGraph` for callers who want a graph object.)
 */
function topologicalOrder(graph: Graph): number[] | undefined {
  const count = graph.steps.length;
  const remaining = new Int32Array(count);
  const dependents: number[][] = Array.from({ length: count }, () => []);
  for (let slot = 0; slot < count; slot++) {
    const own = graph.dependencies[slot] as number[];
    remaining[slot] = own.length;
    for (const dependency of own) (dependents[dependency] as number[]).push(slot);
  }
  const queue: number[] = [];
  for (let slot = 0; slot < count; slot++) if (remaining[slot] === 0) queue.push(slot);
  for (let head = 0; head < queue.length; head++) {
    const current = queue[head] as number;
    graph.position[current] = head;
    for (const next of dependents[current] as number[]) {
      remaining[next] = (remaining[next] as number) - 1;
      if (remaining[next] === 0) queue.push(next);
    }
  }
  return queue.length === count ? queue : undefined;
}

/**
 * One cycle per strongly connected component (Tarjan, iterative), its members in
 * dependency order starting from the component's first step in the plan.
 */
function findCycles(steps: readonly StepShape[], dependencies: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const root of steps) {
    if (index.has(root.id)) continue;
    const work: { id: string; next: number }[] = [{ id: root.id, next: 0 }];
    index.set(root.id, counter);
    low.set(root.id, counter++);
    stack.push(root.id);
    onStack.add(root.id);
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
  const planOrder = new Map(steps.map((step, position) => [step.id, position]));
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
