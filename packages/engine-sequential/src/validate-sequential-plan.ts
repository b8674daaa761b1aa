import {
  ErrorCodes,
  type PlanProblem,
  type PlanValidation,
  type ProblemKind,
  type ToolRegistry,
  validatePlan,
} from '@stepwise/core';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Core validation for the strict engine (references forbidden), plus one check core does not
 * make: the strict engine runs steps in array order, so a step may only depend on steps above it.
 * Without this, `[{ id: "b", dependsOn: ["a"] }, { id: "a" }]` would run `b` before `a`.
 */
export function validateSequentialPlan(plan: unknown, tools: ToolRegistry): PlanValidation {
  const validation = validatePlan(plan, { tools, engine: 'sequential' });
  const order = dependencyOrderProblems(plan);
  if (order.length === 0) return validation;
  return { ok: false, plan: validation.plan, problems: [...validation.problems, ...order] };
}

function dependencyOrderProblems(plan: unknown): PlanProblem[] {
  if (!isObject(plan) || !Array.isArray(plan.steps)) return [];
  const indexById = new Map<string, number>();
  plan.steps.forEach((step, index) => {
    if (isObject(step) && typeof step.id === 'string' && !indexById.has(step.id)) indexById.set(step.id, index);
  });
  const problems: PlanProblem[] = [];
  plan.steps.forEach((step, index) => {
    if (!isObject(step) || !Array.isArray(step.dependsOn)) return;
    step.dependsOn.forEach((dependency, position) => {
      const at = typeof dependency === 'string' ? indexById.get(dependency) : undefined;
      // Unknown ids and self-dependencies are reported by core (unknown dependency, cycle).
      if (at === undefined || at <= index) return;
      problems.push({
        code: ErrorCodes.PLAN_INVALID,
        // Not in core's ProblemKind union yet; see the README's "Known limits".
        kind: 'dependency-order' as ProblemKind,
        path: `/steps/${index}/dependsOn/${position}`,
        message: `step "${String(step.id)}" depends on "${dependency}", which comes later in the plan; the sequential engine runs steps in array order, so move "${dependency}" above it`,
      });
    });
  });
  return problems;
}
