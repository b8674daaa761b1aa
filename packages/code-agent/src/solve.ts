import {
  type AnyTool,
  type ApprovalOptions,
  ErrorCodes,
  type JournalKey,
  MemoryStore,
  type Plan,
  type RunEvent,
  type RunResult,
  type RunStore,
  readAll,
  StepwiseError,
} from '@stepwise/core';
import type { AgenticLimits } from '@stepwise/engine-agentic';
import * as engineAgentic from '@stepwise/engine-agentic';
import type { AttemptReport } from './code-agent-attempt.js';
import { type ChatModel, PLAN_STEP_ID, PLAN_TASK_TOOL, plannerContext } from './plan-task-tool.js';
import { type ValidationCommand, validationCommands } from './run-validation.js';
import {
  checkpointSettings,
  implementationTools,
  type JournaledSolve,
  SOLVE_ENGINE,
  type SolveCheckpointOptions,
  type SolveEngineOptions,
  solveEngine,
} from './solve-engine.js';
import { type SolveAttempt, type SolveResult, solveResult, withValidation } from './solve-result.js';

/**
 * The model `solve` plans and implements with: a `ChatModel` of `@stepwise/engine-agentic`
 * (`openAICompatible(…)`, `fromAISDK(…)` or your own), described by the shape every one of them has.
 */
export interface SolveModel {
  /** Journaled with every model call, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  generate(request: never): Promise<unknown>;
}

/** Settings shared by a new code-agent run and a resumed one (which takes the rest from its journal). */
export interface SolveHostOptions {
  /** The project directory; every tool is confined to it. */
  readonly workspace: string;
  readonly model: SolveModel;
  /** Where the run is journaled. Default: a new MemoryStore (then the run cannot be resumed by another process). */
  readonly store?: RunStore;
  /** Keys the run's hash chain (see the engines' `journalKey`). Default: none. */
  readonly journalKey?: JournalKey;
  /** Attempts per step before it fails. Default 3. */
  readonly maxAttempts?: number;
  /** Planner repairs. Default 2. */
  readonly maxRepairs?: number;
  /** Programs `run_command` may start. Default: the validation commands' programs. */
  readonly allowCommands?: readonly string[];
  /** Model loop limits per attempt (turns, tool failures…). */
  readonly limits?: AgenticLimits;
  /** Default: `run_command` runs without asking (it may only start allowed programs). */
  readonly approvals?: ApprovalOptions;
  /** More tools for the implementation steps (registered beside the Node tools). */
  readonly tools?: readonly AnyTool[];
  /**
   * Files and directories the tools may not touch and the OS sandbox hides or shows read-only: the
   * journal's database, the configuration, plugin files. `.stepwise/` and `stepwise.config.*` at the
   * workspace root are always protected. Default none.
   */
  readonly protectedPaths?: readonly string[];
  /** The run's lease (see the engines' `leaseTtlMs`). Default 30 000 ms. */
  readonly leaseTtlMs?: number;
  /** Progress, as it happens. */
  readonly onProgress?: (event: SolveEvent) => void;
  /** Every event of the run. */
  readonly onEvent?: (event: RunEvent) => void;
  readonly signal?: AbortSignal;
}

export interface SolveOptions extends SolveHostOptions {
  /** What to achieve, in words: the planner's goal and every step's context. */
  readonly task: string;
  /**
   * The validation run after every implementation attempt: an argv (`['npm', 'test']`), or named
   * argv commands, each mandatory unless `optional` (`{ test: ['npm', 'test'], lint: { command: […], optional: true } }`).
   */
  readonly validate: readonly string[] | Readonly<Record<string, unknown>>;
  /** Skip planning and carry out this plan (its steps are goal steps). Default: the run's first step plans the task. */
  readonly plan?: Plan;
  /**
   * When a step uses all its attempts, the model may regenerate the rest of the plan (validated steps
   * stay) this many times. Default 1; 0 never revises.
   */
  readonly maxReplans?: number;
  /** Timeout of each validation command. Default 300 000 ms. */
  readonly validateTimeoutMs?: number;
  /**
   * After a validated step with steps to go: `rules` continue; `model` asks the model to continue,
   * revise the steps to go, or stop (`adjustWithModel`, one model call per step). Default `rules`.
   * Either way one `adjust-decision` is journaled per finished step.
   */
  readonly adjust?: 'rules' | 'model';
  /** What each attempt's checkpoint records (everything but `node_modules` and `.stepwise` by default). */
  readonly checkpoint?: SolveCheckpointOptions;
}

export type SolveEvent =
  | { readonly type: 'plan-ready'; readonly plan: Plan }
  | { readonly type: 'attempt-start'; readonly stepId: string; readonly attempt: number }
  | { readonly type: 'attempt-end'; readonly attempt: SolveAttempt }
  | { readonly type: 'plan-revised'; readonly revision: number; readonly plan: Plan };

function checkOptions(
  options: Pick<SolveOptions, 'task' | 'validate' | 'maxAttempts' | 'maxReplans'>,
): ValidationCommand[] {
  const bad = (location: string, message: string) =>
    new StepwiseError(ErrorCodes.CONFIG_INVALID, message, { location });
  if (typeof options.task !== 'string' || options.task.trim() === '') throw bad('task', 'solve needs a task');
  const commands = validationCommands(options.validate, 'validate');
  const attempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(attempts) || attempts < 1) throw bad('maxAttempts', 'maxAttempts must be a whole number ≥ 1');
  const replans = options.maxReplans ?? 1;
  if (!Number.isInteger(replans) || replans < 0) throw bad('maxReplans', 'maxReplans must be a whole number ≥ 0');
  return commands;
}

/** The first plan of a code-agent run: the given plan, or one planning step. */
function initialPlan(options: SolveOptions): Plan {
  if (options.plan) return options.plan;
  return {
    id: 'solve',
    goal: options.task,
    // Without a plan there is nothing to go on with: the planning step is critical.
    steps: [{ id: PLAN_STEP_ID, tool: PLAN_TASK_TOOL, args: { task: options.task }, critical: true }],
  };
}

/** The engine of a code-agent run, with progress wired to `onProgress`. */
async function engineFor(options: SolveHostOptions, settings: JournaledSolve, store: RunStore, planned: boolean) {
  const { onProgress } = options;
  let awaitingPlan = !planned;
  const onEvent = (event: RunEvent) => {
    options.onEvent?.(event);
    if (event.type !== 'plan-revise' || !onProgress) return;
    // The planning step is the run's, not the task's: progress shows the implementation steps.
    const plan = { ...event.plan, steps: event.plan.steps.filter((step) => step.tool !== PLAN_TASK_TOOL) };
    if (awaitingPlan) onProgress({ type: 'plan-ready', plan });
    else onProgress({ type: 'plan-revised', revision: event.revision, plan });
    awaitingPlan = false;
  };
  const engineOptions: SolveEngineOptions = {
    agentic: engineAgentic,
    model: options.model as ChatModel,
    workspace: options.workspace,
    store,
    settings,
    maxAttempts: options.maxAttempts ?? 3,
    allowCommands: options.allowCommands ?? [...new Set(settings.validation.map((each) => each.command[0] as string))],
    onEvent,
    ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.approvals ? { approvals: options.approvals } : {}),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.protectedPaths ? { protectedPaths: options.protectedPaths } : {}),
    ...(options.journalKey === undefined ? {} : { journalKey: options.journalKey }),
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(onProgress
      ? {
          onAttemptStart: (stepId: string, attempt: number) => onProgress({ type: 'attempt-start', stepId, attempt }),
          onAttemptEnd: (attempt: AttemptReport, runId: string) =>
            onProgress({ type: 'attempt-end', attempt: withValidation(attempt, runId) }),
        }
      : {}),
  };
  return solveEngine(engineOptions);
}

/**
 * The code agent (seed 004) as one run on the one scheduler: the first step plans the task (or
 * `plan` is given); after each step the adjust hook journals a decision (the planned steps, a replan
 * after a step used all its attempts, or continue); each implementation step is a goal step whose
 * attempts are each a workspace transaction: checkpoint (saved on disk, journaled), the model loop,
 * the validation commands through the kernel, a rollback unless they pass. The scheduler retries a
 * failed attempt (with the failing tests in the next prompt) up to `maxAttempts`; independent steps
 * go on after one fails. Resumable with `resumeSolve` (or `stepwise resume`) after a crash.
 */
export async function solve(options: SolveOptions): Promise<SolveResult> {
  const validation = checkOptions(options);
  const store = options.store ?? new MemoryStore();
  const settings: JournaledSolve = {
    task: options.task,
    validation,
    maxReplans: options.maxReplans ?? 1,
    validateTimeoutMs: options.validateTimeoutMs ?? 300_000,
    ...(options.adjust ? { adjust: options.adjust } : {}),
    ...checkpointSettings(options.workspace, options.checkpoint),
  };
  const engine = await engineFor(options, settings, store, options.plan !== undefined);
  const plan = initialPlan(options);
  if (options.plan) options.onProgress?.({ type: 'plan-ready', plan });
  const run = await engine.run(plan, options.signal ? { signal: options.signal } : {}).result;
  return solveResult(store, run);
}

export interface ResumeSolveOptions extends SolveHostOptions {
  readonly store: RunStore;
  readonly runId: string;
  /** Failed steps of an ended run to run again (new attempts). */
  readonly retry?: readonly string[];
  /** Failed steps of an ended run to end skipped. */
  readonly skip?: readonly string[];
  readonly by?: string;
  readonly reason?: string;
}

/** The settings a code-agent run journaled with its `run-start` (E601 for a run `solve` did not start). */
export async function journaledSolve(store: RunStore, runId: string): Promise<JournaledSolve & { planned: boolean }> {
  const events = await readAll(store, runId);
  const first = events[0];
  const settings = first?.type === 'run-start' ? (first.options?.solve as JournaledSolve | undefined) : undefined;
  if (first?.type !== 'run-start' || first.engine !== SOLVE_ENGINE || !settings) {
    throw new StepwiseError(ErrorCodes.CONFIG_INVALID, `run ${runId} is not a code-agent (solve) run`, {
      location: runId,
    });
  }
  const planning = first.plan.steps.some((step) => step.tool === PLAN_TASK_TOOL);
  return { ...settings, planned: !planning || events.some((event) => event.type === 'plan-revise') };
}

/**
 * Continues a code-agent run: after a crash, an attempt in flight is validated as the workspace
 * holds it (and rolled back if that fails) before the plan goes on; an ended run continues with
 * `retry` / `skip`. The task, validation and checkpoint settings are the run's own (journaled).
 */
export async function resumeSolve(options: ResumeSolveOptions): Promise<SolveResult> {
  const { planned, ...settings } = await journaledSolve(options.store, options.runId);
  const engine = await engineFor(options, settings, options.store, planned);
  const run: RunResult = await engine.resume(options.runId, {
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.skip ? { skip: options.skip } : {}),
    ...(options.by ? { by: options.by } : {}),
    ...(options.reason ? { reason: options.reason } : {}),
  }).result;
  return solveResult(options.store, run);
}

export interface PlanTaskOptions
  extends Pick<
    SolveHostOptions,
    'workspace' | 'model' | 'maxRepairs' | 'allowCommands' | 'tools' | 'protectedPaths' | 'signal'
  > {
  readonly task: string;
  /** The validation the plan will be carried out under (the planner is told). */
  readonly validate: SolveOptions['validate'];
}

/**
 * Plans a task as `solve` would (the same planner, tools and instructions, with the repair loop),
 * without carrying it out: a plan to review, edit, approve, then `solve({ plan })` or
 * `stepwise solve --plan file`. Throws the planner's error (E408, E409) when no valid plan comes.
 */
export async function planTask(options: PlanTaskOptions): Promise<Plan> {
  const validation = checkOptions({ ...options, maxAttempts: 1 });
  const tools = await implementationTools({
    workspace: options.workspace,
    allowCommands: options.allowCommands ?? [...new Set(validation.map((each) => each.command[0] as string))],
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.protectedPaths ? { protectedPaths: options.protectedPaths } : {}),
  });
  const planned = await engineAgentic.planFromGoal({
    goal: options.task,
    tools,
    model: options.model as ChatModel,
    engine: 'agentic',
    context: plannerContext(validation.map((each) => `${each.name}: ${each.command.join(' ')}`)),
    ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return planned.plan;
}
