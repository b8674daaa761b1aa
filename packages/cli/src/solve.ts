import type {
  AnyTool,
  ApprovalOptions,
  JournalKey,
  Plan,
  PlanRevision,
  RunEvent,
  RunStatus,
  RunStore,
} from '@stepwise/core';
import type { AgenticLimits } from './create-runner.js';
import { importOptionalPackage } from './import-optional-package.js';

// The deprecated `solve`, `resumeSolve` and `planTask` below pass their options to
// `@stepwise/code-agent`, an optional peer, so their types are declared here, field by field, as
// that package declares them: the cli's declaration files must load without it. Calling it below
// with these options and returning its result checks one direction; test/solve-types.test.ts
// checks the other, so the two cannot drift apart.

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

/** A validation command's outcome after an attempt, as the attempt reports it. */
export interface SolveValidation {
  readonly name?: string;
  readonly command: readonly string[];
  readonly optional?: boolean;
  /** Null when the command did not run to an exit (not found, timed out, killed). */
  readonly exitCode: number | null;
  readonly passed: boolean;
  readonly output: string;
  readonly error?: string;
  /** Failing tests named in the output. */
  readonly failingTests: readonly { readonly name: string; readonly file?: string; readonly output: string }[];
}

/** One implementation attempt of one step, with its validation and rollback. */
export interface SolveAttempt {
  readonly runId: string;
  readonly stepId: string;
  readonly attempt: number;
  readonly revision: number;
  readonly status: 'succeeded' | 'failed';
  readonly error?: string;
  readonly validations: readonly SolveValidation[];
  /** The mandatory validation that failed, else the first one (absent when the attempt was not validated). */
  readonly validation?: SolveValidation;
  readonly changes: {
    readonly created: readonly string[];
    readonly modified: readonly string[];
    readonly deleted: readonly string[];
  };
  readonly rolledBack: boolean;
  readonly rollback?: { readonly restored: readonly string[]; readonly removed: readonly string[] };
}

/** Progress of a code-agent run, as it happens. */
export type SolveEvent =
  | { readonly type: 'plan-ready'; readonly plan: Plan }
  | { readonly type: 'attempt-start'; readonly stepId: string; readonly attempt: number }
  | { readonly type: 'attempt-end'; readonly attempt: SolveAttempt }
  | { readonly type: 'plan-revised'; readonly revision: number; readonly plan: Plan };

/** Settings of a new code-agent run and of a resumed one; the code agent's README describes each. */
export interface SolveHostOptions {
  /** The project directory; every tool is confined to it. */
  readonly workspace: string;
  readonly model: SolveModel;
  /** Default: a new MemoryStore. */
  readonly store?: RunStore;
  readonly journalKey?: JournalKey;
  /** Attempts per step before it fails. Default 3. */
  readonly maxAttempts?: number;
  /** Planner repairs. Default 2. */
  readonly maxRepairs?: number;
  /** Programs `run_command` may start. Default: the validation commands' programs. */
  readonly allowCommands?: readonly string[];
  /** Model loop limits per attempt. */
  readonly limits?: Omit<AgenticLimits, 'onBlocked' | 'onLimit'>;
  readonly approvals?: ApprovalOptions;
  /** More tools for the implementation steps. */
  readonly tools?: readonly AnyTool[];
  /** Files and directories the tools may not touch. */
  readonly protectedPaths?: readonly string[];
  readonly leaseTtlMs?: number;
  readonly onProgress?: (event: SolveEvent) => void;
  readonly onEvent?: (event: RunEvent) => void;
  readonly signal?: AbortSignal;
}

/** The options of `solve` in `@stepwise/code-agent`. */
export interface SolveOptions extends SolveHostOptions {
  /** What to achieve, in words. */
  readonly task: string;
  /** An argv (`['npm', 'test']`) or named argv commands, run after every attempt. */
  readonly validate: readonly string[] | Readonly<Record<string, unknown>>;
  /** Carry out this plan instead of planning. */
  readonly plan?: Plan;
  /** Plan revisions when a step uses all its attempts. Default 1. */
  readonly maxReplans?: number;
  readonly validateTimeoutMs?: number;
  readonly adjust?: 'rules' | 'model';
  /** What each attempt's checkpoint records. */
  readonly checkpoint?: {
    readonly exclude?: readonly string[];
    readonly paths?: readonly string[];
    readonly maxBytes?: number;
    readonly maxEntries?: number;
    readonly directory?: string;
  };
}

/** The options of `resumeSolve` in `@stepwise/code-agent`: the run, its store and the host settings. */
export interface ResumeSolveOptions extends SolveHostOptions {
  readonly runId: string;
  readonly store: RunStore;
  /** Failed steps of an ended run to run again. */
  readonly retry?: readonly string[];
  /** Failed steps of an ended run to end skipped. */
  readonly skip?: readonly string[];
  readonly by?: string;
  readonly reason?: string;
}

/** The options of `planTask` in `@stepwise/code-agent`. */
export interface PlanTaskOptions
  extends Pick<
    SolveHostOptions,
    'workspace' | 'model' | 'maxRepairs' | 'allowCommands' | 'tools' | 'protectedPaths' | 'signal'
  > {
  readonly task: string;
  readonly validate: SolveOptions['validate'];
}

/** How a code-agent run ended (`SolveResult` of `@stepwise/code-agent`). */
export interface SolveResult {
  /** `solved`: every step validated; `partial`: some steps validated; `failed`: none. */
  readonly status: 'solved' | 'partial' | 'failed';
  readonly runId: string;
  readonly runStatus: RunStatus;
  /** The plan as it ended (its last revision). */
  readonly plan: Plan;
  /** Revisions of the plan (the planned steps, replans) in order. */
  readonly revisions: readonly Pick<PlanRevision, 'revision' | 'plan' | 'diff' | 'digest' | 'parentDigest'>[];
  readonly attempts: readonly SolveAttempt[];
  /** How each step ended (`pending`: never started). */
  readonly steps: readonly {
    readonly stepId: string;
    readonly status: string;
    readonly attempts: number;
    readonly error?: string;
  }[];
  /** A few lines for people: what ran, what failed, what was rolled back. */
  readonly summary: string;
  readonly failedStepId?: string;
}

/**
 * The code agent: `solve` of `@stepwise/code-agent`, loaded on demand (E601 naming it when it is
 * not installed).
 * @deprecated Import `solve` from `@stepwise/code-agent`.
 */
export async function solve(options: SolveOptions): Promise<SolveResult> {
  const codeAgent = await loadCodeAgent('solve', 'solve');
  return codeAgent.solve(options);
}

/**
 * Continues a code-agent run: `resumeSolve` of `@stepwise/code-agent`, loaded on demand.
 * @deprecated Import `resumeSolve` from `@stepwise/code-agent`.
 */
export async function resumeSolve(options: ResumeSolveOptions): Promise<SolveResult> {
  const codeAgent = await loadCodeAgent('resumeSolve', 'solve');
  return codeAgent.resumeSolve(options);
}

/**
 * Plans a task as `solve` would: `planTask` of `@stepwise/code-agent`, loaded on demand.
 * @deprecated Import `planTask` from `@stepwise/code-agent`.
 */
export async function planTask(options: PlanTaskOptions): Promise<Plan> {
  const codeAgent = await loadCodeAgent('planTask', 'plan');
  return codeAgent.planTask(options);
}
