import { createJsonLocator, type PlanProblem } from '@stepwise/core';
import type { PlanFile } from './read-plan-file.js';

/** A plan problem with the line and column (1-based) of its JSON path in the plan file. */
export interface LocatedPlanProblem extends PlanProblem {
  readonly line?: number;
  readonly column?: number;
}

/** Each problem's JSON path located in the file the plan was read from (one parse for all). */
export function locatePlanProblems(planFile: PlanFile, problems: readonly PlanProblem[]): LocatedPlanProblem[] {
  const locate = createJsonLocator(planFile.text);
  return problems.map((problem) => {
    const at = locate(problem.path);
    return at ? { ...problem, line: at.line, column: at.column } : problem;
  });
}

/** `file:line:column code path message`, one line per problem, as compilers print them. */
export function formatPlanProblems(planFile: PlanFile, problems: readonly PlanProblem[]): string[] {
  return locatePlanProblems(planFile, problems).map((problem) => {
    const where = problem.line === undefined ? planFile.file : `${planFile.file}:${problem.line}:${problem.column}`;
    return `${where} ${problem.code} ${problem.path || '/'} ${problem.message}`;
  });
}
