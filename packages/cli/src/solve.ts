import type { Plan, RunStatus, RunStore } from '@stepwise/core';
import { importOptionalPackage } from './import-optional-package.js';

/**
 * Loads `@stepwise/code-agent` (an optional peer): E601 naming it when it is not installed.
 * `stepwise solve`, `stepwise plan`, resuming a code-agent run and `solve()` call it first.
 */
export const loadCodeAgent = (purpose: string, location: string) =>
  importOptionalPackage('@stepwise/code-agent', purpose, location, () => import('@stepwise/code-agent'));

/**
 * The model the code agent plans and implements with: a `ChatModel` of `@stepwise/engine-agentic`,
 * described by its shape so that the types of `@stepwise/cli` need neither package.
 */
export interface SolveModel {
  /** Journaled with every model call, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  generate(request: never): Promise<unknown>;
}

/**
 * The options of `solve` in `@stepwise/code-agent`, whose README lists them all. The cli names the
 * ones every run needs and passes the others on as they are; the package checks them.
 */
export interface SolveOptions {
  /** What to achieve, in words. */
  readonly task: string;
  /** The project directory; every tool is confined to it. */
  readonly workspace: string;
  readonly model: SolveModel;
  /** An argv (`['npm', 'test']`) or named argv commands, run after every attempt. */
  readonly validate: readonly string[] | Readonly<Record<string, unknown>>;
  readonly store?: RunStore;
  readonly [option: string]: unknown;
}

/** The options of `resumeSolve` in `@stepwise/code-agent`: the run, its store and the host settings. */
export interface ResumeSolveOptions {
  readonly runId: string;
  readonly store: RunStore;
  readonly workspace: string;
  readonly model: SolveModel;
  readonly [option: string]: unknown;
}

/** The options of `planTask` in `@stepwise/code-agent`. */
export interface PlanTaskOptions {
  readonly task: string;
  readonly workspace: string;
  readonly model: SolveModel;
  readonly validate: SolveOptions['validate'];
  readonly [option: string]: unknown;
}

/**
 * How a code-agent run ended (`SolveResult` of `@stepwise/code-agent`, which also lists its
 * attempts, steps and revisions).
 */
export interface SolveResult {
  /** `solved`: every step validated; `partial`: some steps validated; `failed`: none. */
  readonly status: 'solved' | 'partial' | 'failed';
  readonly runId: string;
  readonly runStatus: RunStatus;
  /** The plan as it ended (its last revision). */
  readonly plan: Plan;
  /** A few lines for people: what ran, what failed, what was rolled back. */
  readonly summary: string;
  readonly failedStepId?: string;
}

/**
 * The code agent: `solve` of `@stepwise/code-agent`, loaded on demand (E601 naming it when it is
 * not installed).
 * @deprecated Import `solve` from `@stepwise/code-agent`, whose types describe every option and result.
 */
export async function solve(options: SolveOptions): Promise<SolveResult> {
  const codeAgent = await loadCodeAgent('solve', 'solve');
  return codeAgent.solve(options as unknown as Parameters<typeof codeAgent.solve>[0]);
}

/**
 * Continues a code-agent run: `resumeSolve` of `@stepwise/code-agent`, loaded on demand.
 * @deprecated Import `resumeSolve` from `@stepwise/code-agent`.
 */
export async function resumeSolve(options: ResumeSolveOptions): Promise<SolveResult> {
  const codeAgent = await loadCodeAgent('resumeSolve', 'solve');
  return codeAgent.resumeSolve(options as unknown as Parameters<typeof codeAgent.resumeSolve>[0]);
}

/**
 * Plans a task as `solve` would: `planTask` of `@stepwise/code-agent`, loaded on demand.
 * @deprecated Import `planTask` from `@stepwise/code-agent`.
 */
export async function planTask(options: PlanTaskOptions): Promise<Plan> {
  const codeAgent = await loadCodeAgent('planTask', 'plan');
  return codeAgent.planTask(options as unknown as Parameters<typeof codeAgent.planTask>[0]);
}
