import { type ErrorCode, ErrorCodes, StepwiseError } from '../errors.js';
import { compileSchema } from '../tools/schema.js';
import type { ToolCatalog } from '../tools/tool-registry.js';
import { reportCycles } from './dependency-cycles.js';
import {
  type CollectedSteps,
  collectSteps,
  type DependencyIndex,
  idOf,
  linkDependencies,
  planIndexOf,
  type TopologicalOrder,
  topologicalOrder,
} from './dependency-index.js';
import { didYouMean } from './did-you-mean.js';
import { describeJsonSyntaxError } from './json-error-location.js';
import {
  ARGS_NESTING_DEPTH,
  deeper,
  deeperOutsideArgs,
  MAX_NESTING_DEPTH,
  tooDeepMessage,
  tooDeepPath,
} from './nesting-depth.js';
import { type Plan, PlanSchema } from './plan-schema.js';
import { isPlainValidPlan } from './plan-shape-check.js';
import { ReferenceJudge, reportReferenceProblems } from './reference-checks.js';
import { findReferences, toJsonPath } from './references.js';
import { schemaIssueProblems } from './schema-issue-problems.js';
import { SpareInts } from './spare-ints.js';

export type ProblemKind =
  | 'json-syntax'
  | 'schema'
  | 'duplicate-step-id'
  | 'unknown-dependency'
  | 'dependency-cycle'
  | 'dependency-order'
  | 'missing-tool'
  | 'unknown-tool'
  | 'invalid-args'
  | 'reference-unknown-step'
  | 'reference-not-dependency'
  | 'reference-forbidden'
  | 'too-deep';

/** One problem with a plan. `code` is the error family (E001, E201, E202); `kind` says which check. */
export interface PlanProblem {
  readonly code: string;
  readonly kind: ProblemKind;
  /** JSON pointer into the plan, e.g. `/steps/3/dependsOn/0`. */
  readonly path: string;
  readonly message: string;
}

export type EngineKind = 'sequential' | 'dag' | 'agentic';

/**
 * What validation passes problem messages and paths through (a run's `Redactor` is one): they
 * quote the plan (tool names, step ids, unknown keys, references), which may hold a secret.
 */
export interface ProblemRedactor {
  redactText(text: string): string;
}

export interface ValidatePlanOptions {
  /** When given, tools must be registered and args must pass their input schemas. */
  readonly tools?: ToolCatalog;
  /** `sequential` forbids references; `agentic` allows goal steps without a tool. Default `dag`. */
  readonly engine?: EngineKind | (string & {});
  /** Goal steps (no `tool`) are admitted: the engine has a goal-step executor. Default: only under `agentic`. */
  readonly goalSteps?: boolean;
  /** Redacts every problem's message and path (engines pass the run's redactor). Default: none. */
  readonly redactor?: ProblemRedactor;
}

export type PlanValidation =
  | {
      readonly ok: true;
      readonly plan: Plan;
      readonly problems: readonly [];
      readonly order: readonly string[];
    }
  | {
      readonly ok: false;
      readonly plan: Plan | undefined;
      readonly problems: readonly PlanProblem[];
    };

/** How the checks report a problem. */
export type AddProblem = (code: string, kind: ProblemKind, path: string, message: string) => void;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toolNames(tools: ToolCatalog): string[] {
  return [...tools.list().map((tool) => tool.name), ...tools.aliases().keys()];
}

/**
 * Checks a plan and returns every problem found, never throwing for bad input. Steps are
 * numbered and the graph kept in index arrays, so every check is linear in the plan's size; the
 * one exception, references to ancestors no label or bounded search settles, is stated with its
 * bound at `answerAncestorQueries`.
 */
export function validatePlan(input: unknown, options: ValidatePlanOptions = {}): PlanValidation {
  const problems: PlanProblem[] = [];
  const engine = options.engine ?? 'dag';
  const add = problemAdder(problems, options.redactor);

  // Every later check (and the digest, the redactor, the stores) walks the plan by recursion. The
  // steps' args are measured while their references are walked, before anything else walks them;
  // a plain valid plan has had the rest measured by its shape check, one pass over the steps.
  const plain = isPlainValidPlan(input);
  if (!plain && deeperOutsideArgs(input)) return tooDeep(input, options);

  // Plain data skips the schema's copy (see isPlainValidPlan); anything else gets the schema's problems.
  const parsed = plain ? ({ success: true, data: input } as const) : PlanSchema.safeParse(input);
  if (!parsed.success) {
    for (const problem of schemaIssueProblems(parsed.error.issues, PlanSchema)) {
      add(ErrorCodes.PLAN_INVALID, 'schema', problem.path, problem.message);
    }
  }
  const rawSteps = isObject(input) && Array.isArray(input.steps) ? input.steps : [];

  // Structure checks run on whatever steps have an id, so one bad field does not hide the rest.
  const steps = collectSteps(rawSteps, add);
  if (skippedArgsTooDeep(rawSteps, steps)) return tooDeep(input, options);
  const index: DependencyIndex = { ...steps, dependencies: linkDependencies(steps, engine, add) };
  const spare = new SpareInts();
  const sorted = topologicalOrder(index.dependencies, spare);
  if (!sorted.acyclic) reportCycles(index, add);
  if (!checkSteps(index, sorted, engine, options, add, spare)) return tooDeep(input, options);

  if (problems.length === 0 && parsed.success && sorted.acyclic) {
    return { ok: true, plan: parsed.data, problems: [], order: idsInOrder(steps, sorted) };
  }
  return { ok: false, plan: parsed.success ? parsed.data : undefined, problems };
}

/**
 * The ids in topological order. Steps are read in plan order, each id written at its position:
 * reading them in topological order would jump about the plan, a cache miss per step.
 */
function idsInOrder(steps: CollectedSteps, sorted: TopologicalOrder): string[] {
  const inOrder = new Array<string>(steps.raw.length);
  for (let slot = 0; slot < steps.raw.length; slot++) inOrder[sorted.position[slot] as number] = idOf(steps, slot);
  return inOrder;
}

function problemAdder(problems: PlanProblem[], redactor: ProblemRedactor | undefined): AddProblem {
  return redactor
    ? (code, kind, path, message) =>
        problems.push({ code, kind, path: redactor.redactText(path), message: redactor.redactText(message) })
    : (code, kind, path, message) => problems.push({ code, kind, path, message });
}

/** The one problem of a plan nested too deep: the first place in document order, nothing else. */
function tooDeep(input: unknown, options: ValidatePlanOptions): PlanValidation {
  const problems: PlanProblem[] = [];
  // Only args inherited from a prototype, which the path search does not count, leave it undefined.
  const segments = tooDeepPath(input) ?? ['steps'];
  const inArgs = segments[0] === 'steps' && segments[2] === 'args';
  problemAdder(problems, options.redactor)(
    inArgs ? ErrorCodes.ARGUMENTS_INVALID : ErrorCodes.PLAN_INVALID,
    'too-deep',
    toJsonPath(segments),
    tooDeepMessage(inArgs ? 'arguments too deep' : 'plan too deep', MAX_NESTING_DEPTH),
  );
  return { ok: false, plan: undefined, problems };
}

/**
 * Tool, reference and argument checks, in two passes. The first reads each step once (its tool,
 * its references, its arguments against the tool's schema) and only notes which steps have a
 * problem; the ancestry of all references is then answered in one batch. The second reports the
 * problems of the noted steps, tool then references then arguments, as one pass per step would.
 * False, before any schema has seen them, when a step's args nest too deep (see `deeperOutsideArgs`).
 */
function checkSteps(
  index: DependencyIndex,
  sorted: TopologicalOrder,
  engine: string,
  options: ValidatePlanOptions,
  add: AddProblem,
  spare: SpareInts,
): boolean {
  const { tools } = options;
  const { raw } = index;
  const goalSteps = options.goalSteps ?? engine === 'agentic';
  const judge = new ReferenceJudge(index, sorted, engine, spare);
  const noted = new Uint8Array(raw.length);
  let slot = 0;
  const note: AddProblem = () => {
    noted[slot] = 1;
  };
  for (; slot < raw.length; slot++) {
    const step = raw[slot] as Record<string, unknown>;
    checkTool(step, planIndexOf(index, slot), goalSteps, tools, note);
    if (!judge.collect(slot, step.args)) return false;
    checkArgs(step, planIndexOf(index, slot), tools, note);
  }
  judge.finishCollecting();
  // The step-id table has done its bulk work: the searches write over its arrays.
  spare.give(...index.slotById.release((slot) => idOf(index, slot)));
  const verdicts = judge.judge(spare);
  const acyclic = sorted.acyclic;
  for (let reported = 0; reported < raw.length; reported++) {
    const step = raw[reported] as Record<string, unknown>;
    const at = planIndexOf(index, reported);
    if (noted[reported] === 1) checkTool(step, at, goalSteps, tools, add);
    reportReferenceProblems(index, reported, verdicts, engine, acyclic, add);
    if (noted[reported] === 1) checkArgs(step, at, tools, add);
  }
  return true;
}

/** Do the args of a step without a slot (no string id, or a repeated one) nest too deep? Nothing else walks them. */
function skippedArgsTooDeep(rawSteps: readonly unknown[], steps: CollectedSteps): boolean {
  const { planIndex } = steps;
  if (!planIndex) return false;
  for (let index = 0, slot = 0; index < rawSteps.length; index++) {
    if (planIndex[slot] === index) {
      slot++;
      continue;
    }
    const step = rawSteps[index];
    if (isObject(step) && Object.hasOwn(step, 'args') && deeper(step.args, ARGS_NESTING_DEPTH)) return true;
  }
  return false;
}

// Paths are built only for a problem: most steps have none, and a 100,000-step plan would make
// hundreds of thousands of strings for nothing.
function checkTool(
  step: Record<string, unknown>,
  at: number,
  goalSteps: boolean,
  tools: ToolCatalog | undefined,
  add: AddProblem,
): void {
  const tool = step.tool;
  if (tool === undefined) {
    if (!goalSteps)
      add(ErrorCodes.PLAN_INVALID, 'missing-tool', `/steps/${at}/tool`, `step "${step.id}" names no tool`);
  } else if (typeof tool === 'string' && tools && !tools.has(tool)) {
    add(
      ErrorCodes.TOOL_UNKNOWN,
      'unknown-tool',
      `/steps/${at}/tool`,
      `tool "${tool}" is not registered (the whitelist has ${tools.list().length} tools)${didYouMean(tool, toolNames(tools))}`,
    );
  }
}

function checkArgs(step: Record<string, unknown>, at: number, tools: ToolCatalog | undefined, add: AddProblem): void {
  const args = step.args;
  const tool = typeof step.tool === 'string' ? tools?.get(step.tool) : undefined;
  if (!tool || (args !== undefined && !isObject(args))) return;
  const result = compileSchema(tool.input).validate(args ?? {});
  if (result instanceof Promise || result.ok) return;
  // A reference stands for a value only known at run time: its location is not checked.
  const resolvedLater = findReferences(args).map((reference) => reference.path);
  for (const issue of result.issues) {
    if (resolvedLater.some((path) => issue.path === path || issue.path.startsWith(`${path}/`))) continue;
    add(
      ErrorCodes.ARGUMENTS_INVALID,
      'invalid-args',
      `/steps/${at}/args${issue.path}`,
      `${tool.name}: ${issue.message}`,
    );
  }
}

/** Parses plan JSON. Broken JSON gives E004 with line and column; a bad plan gives E001 with every problem. */
export function parsePlan(text: string, options: ValidatePlanOptions = {}): Plan {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const syntax = describeJsonSyntaxError(text, error);
    const location = `line ${syntax.line}, column ${syntax.column}`;
    // The parser's message quotes the text around the error.
    const message = options.redactor ? options.redactor.redactText(syntax.message) : syntax.message;
    throw new StepwiseError(ErrorCodes.INPUT_INVALID, `the plan is not valid JSON (${location}): ${message}`, {
      location,
      details: { line: syntax.line, column: syntax.column },
    });
  }
  const validation = validatePlan(value, options);
  if (!validation.ok) throw planInvalidError(validation.problems);
  return validation.plan;
}

/**
 * The error engines throw for a rejected plan: E201 or E202 when those are the only kinds of
 * problem (so "unknown tool" reads as such), else E001. `details.problems` has all of them.
 */
export function planInvalidError(problems: readonly PlanProblem[]): StepwiseError {
  const codes = new Set(problems.map((problem) => problem.code));
  const code =
    codes.size === 1 && !codes.has(ErrorCodes.PLAN_INVALID)
      ? (problems[0]?.code as ErrorCode)
      : ErrorCodes.PLAN_INVALID;
  const head = problems
    .slice(0, 5)
    .map((problem) => `${problem.path}: ${problem.message}`)
    .join('; ');
  return new StepwiseError(
    code,
    `invalid plan (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${head}${problems.length > 5 ? '; …' : ''}`,
    { location: problems[0]?.path, details: { problems } },
  );
}
