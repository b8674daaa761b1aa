import {
  type AnyTool,
  type ApprovalOptions,
  type Engine,
  ErrorCodes,
  type JournalKey,
  MemoryStore,
  type Plan,
  type PlanRevision,
  type RunEvent,
  type RunStore,
  type Step,
  StepwiseError,
  ToolRegistry,
} from '@stepwise/core';
import { planInvalidError } from '@stepwise/core/engine';
import {
  createCheckpoint,
  nodeTools,
  type WorkspaceChanges,
  type WorkspaceCheckpointOptions,
  WorkspaceSandbox,
} from '@stepwise/tools-node';
import { type AgenticLimits, loadAgenticEngine } from '../create-runner.js';
import { attemptFeedback } from './attempt-feedback.js';
import { runValidation, type ValidationResult } from './run-validation.js';
import { SolveJournal } from './solve-journal.js';

/** The tools a goal step may use to implement a change (run_command only for allowed programs). */
export const IMPLEMENTATION_TOOLS: readonly string[] = [
  'file_read',
  'file_search',
  'file_glob',
  'dir_list',
  'file_edit',
  'file_create',
  'run_command',
];

/**
 * Left out of the checkpoints by default: dependencies, and `.stepwise`, where the command line keeps
 * its journal (restoring a database that is being written would corrupt it). `.git` is never included.
 */
export const DEFAULT_CHECKPOINT_EXCLUDE: readonly string[] = ['node_modules', '.stepwise'];

/**
 * The model `solve` plans and implements with: a `ChatModel` of `@stepwise/engine-agentic`
 * (`openAICompatible(…)`, `fromAISDK(…)` or your own). Described by its shape so that the types of
 * `@stepwise/cli` do not need that package, an optional peer loaded when `solve` runs.
 */
export interface SolveModel {
  /** Journaled with every model call, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  generate(request: never): Promise<unknown>;
}

/** `@stepwise/engine-agentic`, loaded when `solve` runs. */
type AgenticModule = Awaited<ReturnType<typeof loadAgenticEngine>>;
type ChatModel = Parameters<AgenticModule['agenticEngine']>[0]['model'];

export interface SolveOptions {
  /** What to achieve, in words: the planner's goal and every step's context. */
  readonly task: string;
  /** The project directory; every tool is confined to it. */
  readonly workspace: string;
  /** argv of the validation command, run after every implementation attempt, e.g. `['npm', 'test']`. */
  readonly validate: readonly string[];
  readonly model: SolveModel;
  /** Skip planning and carry out this plan. Default: `planFromGoal` with the task. */
  readonly plan?: Plan;
  /** Where every run (implementation and validation) is journaled. Default: a new MemoryStore. */
  readonly store?: RunStore;
  /** Keys every run's hash chain (see the engines' `journalKey`). Default: none. */
  readonly journalKey?: JournalKey;
  /** Attempts per step before giving up. Default 3. */
  readonly maxAttempts?: number;
  /**
   * When a step uses all its attempts, the model may regenerate the rest of the plan (solved steps
   * stay) this many times before `solve` gives up. Default 1; 0 never revises.
   */
  readonly maxReplans?: number;
  /** Planner repairs. Default 2. */
  readonly maxRepairs?: number;
  /** Programs `run_command` may start. Default: the validation command's program only. */
  readonly allowCommands?: readonly string[];
  /** Validation timeout. Default 300 000 ms. */
  readonly validateTimeoutMs?: number;
  /** Model loop limits per attempt (turns, tool failures…). */
  readonly limits?: Omit<AgenticLimits, 'onBlocked' | 'onLimit'>;
  /** Default: `run_command` runs without asking (it may only start allowed programs). */
  readonly approvals?: ApprovalOptions;
  /**
   * Paths, caps and exclusions of the checkpoint taken before each attempt (default: the whole
   * workspace but `DEFAULT_CHECKPOINT_EXCLUDE`). A journal database inside the workspace must be excluded.
   */
  readonly checkpoint?: Omit<WorkspaceCheckpointOptions, 'workspace'>;
  /** More tools for the implementation steps (registered beside the Node tools). */
  readonly tools?: readonly AnyTool[];
  /**
   * Files and directories the tools may not touch and the OS sandbox hides or shows read-only: the
   * journal's database (a `store` object does not say where it is), the configuration, plugin files.
   * `.stepwise/` and `stepwise.config.*` at the workspace root are always protected. Default none.
   */
  readonly protectedPaths?: readonly string[];
  /** Progress, as it happens. */
  readonly onProgress?: (event: SolveEvent) => void;
  /** Every run event of every run. */
  readonly onEvent?: (event: RunEvent) => void;
  readonly signal?: AbortSignal;
}

/** One implementation attempt of one step, with its validation. */
export interface SolveAttempt {
  readonly stepId: string;
  readonly attempt: number;
  readonly runId: string;
  readonly status: 'succeeded' | 'failed';
  readonly error?: string;
  readonly validation: ValidationResult;
  /** What the attempt changed in the workspace. */
  readonly changes: WorkspaceChanges;
  /** True when the changes were undone (the attempt failed). */
  readonly rolledBack: boolean;
  /** What the rollback undid (files restored or removed), when the attempt was rolled back. */
  readonly rollback?: WorkspaceChanges;
}

export type SolveEvent =
  | { readonly type: 'plan-ready'; readonly plan: Plan }
  | { readonly type: 'attempt-start'; readonly stepId: string; readonly attempt: number }
  | { readonly type: 'attempt-end'; readonly attempt: SolveAttempt }
  | { readonly type: 'plan-revised'; readonly revision: PlanRevision };

export interface SolveResult {
  readonly status: 'solved' | 'failed';
  /**
   * The code agent's own run in the store: its plan and revisions, and each attempt's validation and
   * rollback (`stepwise show <runId>`). Implementation and validation runs are its children.
   */
  readonly runId: string;
  /** The plan as it ended (the last revision, when the plan was revised). */
  readonly plan: Plan;
  /** Revisions made when a step used all its attempts (`maxReplans`). */
  readonly revisions: readonly PlanRevision[];
  readonly attempts: readonly SolveAttempt[];
  /** The step that used all its attempts, when the task failed. */
  readonly failedStepId?: string;
  /** A few lines for people: what ran, what failed, what was rolled back. */
  readonly summary: string;
}

function plannerContext(validate: readonly string[]): string {
  return [
    'Plan the change as implementation steps: each step has an "id" and a "description" of one change, and no "tool".',
    `A model carries out each step with ${IMPLEMENTATION_TOOLS.join(', ')}.`,
    `After every step the command \`${validate.join(' ')}\` runs; it must pass after each step, so keep steps whole.`,
    'A small fix is one step.',
  ].join('\n');
}

function checkOptions(options: SolveOptions): void {
  const bad = (location: string, message: string) =>
    new StepwiseError(ErrorCodes.CONFIG_INVALID, message, { location });
  if (typeof options.task !== 'string' || options.task.trim() === '') throw bad('task', 'solve needs a task');
  if (
    !Array.isArray(options.validate) ||
    options.validate.length === 0 ||
    !options.validate.every((part) => typeof part === 'string' && part !== '')
  ) {
    throw bad('validate', 'validate must be an argv array, e.g. ["npm", "test"]');
  }
  const attempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(attempts) || attempts < 1) throw bad('maxAttempts', 'maxAttempts must be a whole number ≥ 1');
  const replans = options.maxReplans ?? 1;
  if (!Number.isInteger(replans) || replans < 0) throw bad('maxReplans', 'maxReplans must be a whole number ≥ 0');
}

function summarize(result: Omit<SolveResult, 'summary' | 'runId'>): string {
  const lines = [`${result.status === 'solved' ? 'Solved' : 'Not solved'}: ${result.plan.goal ?? result.plan.id}`];
  for (const attempt of result.attempts) {
    const { validation } = attempt;
    const failing = validation.failingTests.map((test) => test.name);
    const verdict = validation.passed
      ? 'passed'
      : `failed${failing.length > 0 ? ` (${failing.length} failing: ${failing.slice(0, 3).join('; ')}${failing.length > 3 ? '; …' : ''})` : ''}`;
    lines.push(
      `- ${attempt.stepId} attempt ${attempt.attempt}: step ${attempt.status}${attempt.error ? ` (${attempt.error})` : ''}, \`${validation.command.join(' ')}\` ${verdict}${attempt.rolledBack ? ', rolled back' : ''}`,
    );
  }
  for (const revision of result.revisions) {
    lines.push(
      `- plan revised (revision ${revision.revision}): ${revision.plan.steps.map((step) => step.id).join(', ')}`,
    );
  }
  return lines.join('\n');
}

interface SolveContext {
  readonly options: SolveOptions;
  readonly agentic: AgenticModule;
  readonly model: ChatModel;
  readonly journal: SolveJournal;
  readonly engine: Engine;
  readonly sandbox: WorkspaceSandbox;
  readonly plan: Plan;
}

/**
 * Implements one step: attempt, validate, roll back on failure and retry with the failure explained.
 * Resolves to undefined when solved, else to the explanation of the last failure.
 */
async function solveStep(context: SolveContext, step: Step, attempts: SolveAttempt[]): Promise<string | undefined> {
  const { options, engine, plan, journal } = context;
  const feedback: string[] = [];
  for (let attempt = 1; attempt <= (options.maxAttempts ?? 3); attempt++) {
    options.onProgress?.({ type: 'attempt-start', stepId: step.id, attempt });
    await journal.attemptStart(step.id, attempt);
    const checkpoint = await createCheckpoint({
      exclude: DEFAULT_CHECKPOINT_EXCLUDE,
      ...options.checkpoint,
      workspace: context.sandbox,
    });
    const { dependsOn: _dependsOn, ...own } = step;
    const description = [step.description ?? options.task, ...feedback].join('\n\n');
    const implementation: Step = step.tool
      ? own
      : { ...own, description, tools: step.tools ?? [...IMPLEMENTATION_TOOLS] };
    const run = await engine.run(
      { id: `${plan.id}.${step.id}.${attempt}`, goal: plan.goal ?? options.task, steps: [implementation] },
      { parentRunId: journal.runId, ...(options.signal ? { signal: options.signal } : {}) },
    ).result;
    const result = run.steps[0];
    const validation = await runValidation(engine, options.validate, {
      planId: `${plan.id}.${step.id}.${attempt}.validate`,
      timeoutMs: options.validateTimeoutMs ?? 300_000,
      parentRunId: journal.runId,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const changes = await checkpoint.changes();
    const succeeded = result?.status === 'succeeded';
    const solved = succeeded && validation.passed;
    const rollback = solved ? undefined : await checkpoint.restore();
    const error = succeeded ? undefined : (result?.error?.message ?? `the run ended ${run.status}`);
    const record: SolveAttempt = {
      stepId: step.id,
      attempt,
      runId: run.runId,
      status: succeeded ? 'succeeded' : 'failed',
      ...(error === undefined ? {} : { error }),
      validation,
      changes,
      rolledBack: !solved,
      ...(rollback ? { rollback } : {}),
    };
    await journal.attemptEnd({ ...record, implementationRunId: run.runId });
    attempts.push(record);
    options.onProgress?.({ type: 'attempt-end', attempt: record });
    if (solved) return undefined;
    feedback.push(attemptFeedback({ attempt, ...(error ? { implementationError: error } : {}), validation, changes }));
  }
  return `step "${step.id}" failed ${feedback.length} time${feedback.length === 1 ? '' : 's'}. The last failure:\n${feedback.at(-1)}`;
}

/** Runs the plan's steps in order, skipping those already solved; the first step that fails ends it. */
async function solveSteps(
  context: SolveContext,
  done: Set<string>,
  attempts: SolveAttempt[],
): Promise<{ stepId: string; reason: string } | undefined> {
  const validation = context.engine.validate(context.plan);
  if (!validation.ok) throw planInvalidError(validation.problems);
  for (const stepId of validation.order) {
    if (done.has(stepId)) continue;
    const step = context.plan.steps.find((candidate) => candidate.id === stepId) as Step;
    const reason = await solveStep(context, step, attempts);
    if (reason !== undefined) return { stepId, reason };
    done.add(stepId);
  }
  return undefined;
}

/**
 * The code-agent loop: plans the task (or takes `plan`), then implements each step with the agentic
 * engine and the Node tools; after every attempt the validation command runs, and a failed attempt
 * is rolled back (workspace checkpoint) and retried with the failing tests and output in the
 * step's description, up to `maxAttempts`. Every run is journaled in `store`.
 */
export async function solve(options: SolveOptions): Promise<SolveResult> {
  checkOptions(options);
  const agentic = await loadAgenticEngine('solve', 'solve');
  const model = options.model as ChatModel;
  const protectedPaths = options.protectedPaths ? { protectedPaths: options.protectedPaths } : {};
  // The checkpoints walk this sandbox too: protected files are never recorded nor restored.
  const sandbox = new WorkspaceSandbox({ root: options.workspace, ...protectedPaths });
  const root = await sandbox.realRoot();
  const tools = new ToolRegistry(options.tools ?? []);
  await tools.use(
    nodeTools({
      workspace: root,
      ...protectedPaths,
      commands: { allow: [...(options.allowCommands ?? [options.validate[0] as string])] },
    }),
  );
  const store = options.store ?? new MemoryStore();
  const engine = agentic.agenticEngine({
    model,
    tools,
    store,
    workspace: root,
    approvals: options.approvals ?? { policy: { tools: { run_command: 'auto' } } },
    ...(options.journalKey === undefined ? {} : { journalKey: options.journalKey }),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  const planned = options.plan
    ? undefined
    : await agentic.planFromGoal({
        goal: options.task,
        tools,
        model,
        engine: 'agentic',
        context: plannerContext(options.validate),
        ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
  const plan = options.plan ?? (planned as Awaited<ReturnType<AgenticModule['planFromGoal']>>).plan;
  options.onProgress?.({ type: 'plan-ready', plan });
  // The planner ran before the run existed: its model calls are the run's first events after run-start.
  const journal = await SolveJournal.open(
    store,
    plan,
    (planned?.calls ?? []).map((call) => agentic.plannerCallEvent(call, model.name)),
    options.journalKey,
  );
  try {
    const outcome = await solveLoop({ options, engine, sandbox, plan, journal, agentic, model }, tools);
    await journal.finish(outcome.status === 'solved');
    return { ...outcome, runId: journal.runId, summary: summarize(outcome) };
  } catch (error) {
    await journal.abandon();
    throw error;
  }
}

/** Solves the steps; when one uses all its attempts, regenerates the rest of the plan (up to `maxReplans`). */
async function solveLoop(context: SolveContext, tools: ToolRegistry): Promise<Omit<SolveResult, 'summary' | 'runId'>> {
  const { options, journal } = context;
  const attempts: SolveAttempt[] = [];
  const revisions: PlanRevision[] = [];
  const done = new Set<string>();
  let current = context.plan;
  for (let replans = 0; ; replans++) {
    const failure = await solveSteps({ ...context, plan: current }, done, attempts);
    if (failure === undefined) break;
    if (replans >= (options.maxReplans ?? 1)) {
      return { status: 'failed', plan: current, attempts, revisions, failedStepId: failure.stepId };
    }
    const { revision } = await context.agentic.replanRemaining({
      journal: journal.runJournal,
      plan: current,
      started: done,
      reason: failure.reason,
      tools,
      model: context.model,
      engine: 'agentic',
      context: plannerContext(options.validate),
      ...(options.maxRepairs === undefined ? {} : { maxRepairs: options.maxRepairs }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    revisions.push(revision);
    await journal.revise(revision, failure.reason);
    current = revision.plan;
    options.onProgress?.({ type: 'plan-revised', revision });
  }
  return { status: 'solved', plan: current, attempts, revisions };
}
