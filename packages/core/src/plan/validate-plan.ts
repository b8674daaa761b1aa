import { ErrorCodes, StepwiseError } from '../errors.js';
import { compileSchema } from '../tools/schema.js';
import type { ToolCatalog } from '../tools/tool-registry.js';
import { answerAncestorQueries } from './ancestor-queries.js';
import { reportCycles } from './dependency-cycles.js';
import {
  collectSteps,
  type DependencyIndex,
  linkDependencies,
  type StepShape,
  type TopologicalOrder,
  topologicalOrder,
} from './dependency-index.js';
import { didYouMean } from './did-you-mean.js';
import { describeJsonSyntaxError } from './json-error-location.js';
import { MAX_NESTING_DEPTH, tooDeepMessage, tooDeepPath } from './nesting-depth.js';
import { type Plan, PlanSchema } from './plan-schema.js';
import { isPlainValidPlan } from './plan-shape-check.js';
import { findReferences, type Reference, toJsonPath } from './references.js';
import { schemaIssueProblems } from './schema-issue-problems.js';

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
 * numbered and the graph kept in index arrays, so every check is linear in the plan's size
 * except the reference check on references to steps that are neither direct dependencies nor
 * ancestors along a spanning forest; `answerAncestorQueries` states that bound.
 */
export function validatePlan(input: unknown, options: ValidatePlanOptions = {}): PlanValidation {
  const problems: PlanProblem[] = [];
  const engine = options.engine ?? 'dag';
  const { redactor } = options;
  const add: AddProblem = redactor
    ? (code, kind, path, message) =>
        problems.push({ code, kind, path: redactor.redactText(path), message: redactor.redactText(message) })
    : (code, kind, path, message) => problems.push({ code, kind, path, message });

  // Every later check (and the digest, the redactor, the stores) walks the plan by recursion.
  const deep = tooDeepPath(input);
  if (deep) {
    addTooDeep(deep, add);
    return { ok: false, plan: undefined, problems };
  }

  // Plain data skips the schema's copy (see isPlainValidPlan); anything else gets the schema's problems.
  const parsed = isPlainValidPlan(input) ? ({ success: true, data: input } as const) : PlanSchema.safeParse(input);
  if (!parsed.success) {
    for (const problem of schemaIssueProblems(parsed.error.issues, PlanSchema)) {
      add(ErrorCodes.PLAN_INVALID, 'schema', problem.path, problem.message);
    }
  }
  const rawSteps = isObject(input) && Array.isArray(input.steps) ? input.steps : [];

  // Structure checks run on whatever steps have an id, so one bad field does not hide the rest.
  const { steps, slotById } = collectSteps(rawSteps, add);
  const dependencies = linkDependencies(steps, slotById, engine, add);
  const sorted = topologicalOrder(dependencies);
  if (!sorted.order) reportCycles(steps, slotById, dependencies, add);
  checkSteps({ steps, slotById, dependencies }, sorted, engine, options, add);

  if (problems.length === 0 && parsed.success && sorted.order) {
    return { ok: true, plan: parsed.data, problems: [], order: sorted.order.map((slot) => steps[slot]?.id as string) };
  }
  return { ok: false, plan: parsed.success ? parsed.data : undefined, problems };
}

function addTooDeep(segments: readonly (string | number)[], add: AddProblem): void {
  const inArgs = segments[0] === 'steps' && segments[2] === 'args';
  add(
    inArgs ? ErrorCodes.ARGUMENTS_INVALID : ErrorCodes.PLAN_INVALID,
    'too-deep',
    toJsonPath(segments),
    tooDeepMessage(inArgs ? 'arguments too deep' : 'plan too deep', MAX_NESTING_DEPTH),
  );
}

/** Does a reference need the ancestry answer? Only on permissive engines, in acyclic plans, to a known step. */
function asksAncestry(engine: string, target: number | undefined, acyclic: boolean): target is number {
  return engine !== 'sequential' && target !== undefined && acyclic;
}

/**
 * Tool, reference and argument checks, step by step in plan order. References are found first and
 * their ancestry answered in one batch; the problems keep the order one pass per step gives them.
 */
function checkSteps(
  index: DependencyIndex,
  sorted: TopologicalOrder,
  engine: string,
  options: ValidatePlanOptions,
  add: AddProblem,
): void {
  const { steps, slotById } = index;
  const { tools } = options;
  const acyclic = sorted.order !== undefined;
  const referencesOf: Reference[][] = [];
  const sources: number[] = [];
  const targets: number[] = [];
  for (let slot = 0; slot < steps.length; slot++) {
    const args = (steps[slot] as StepShape).args;
    const references = isObject(args) ? findReferences(args) : NO_REFERENCES;
    // Most steps reference nothing: one shared empty list instead of one per step.
    referencesOf.push(references.length === 0 ? NO_REFERENCES : references);
    for (const reference of references) {
      const target = slotById.get(reference.stepId);
      if (!asksAncestry(engine, target, acyclic)) continue;
      sources.push(slot);
      targets.push(target);
    }
  }
  const answers =
    sources.length > 0 && sorted.order
      ? answerAncestorQueries({ ...sorted, order: sorted.order, dependencies: index.dependencies }, sources, targets)
      : new Uint8Array(0);

  let query = 0;
  for (let slot = 0; slot < steps.length; slot++) {
    const step = steps[slot] as StepShape;
    checkTool(step, options.goalSteps ?? engine === 'agentic', tools, add);
    const references = referencesOf[slot] as Reference[];
    for (const reference of references) {
      const target = slotById.get(reference.stepId);
      if (!asksAncestry(engine, target, acyclic)) {
        checkReferenceTarget(reference, target, `/steps/${step.index}/args${reference.path}`, engine, add);
      } else if (answers[query++] === 0) {
        add(
          ErrorCodes.PLAN_INVALID,
          'reference-not-dependency',
          `/steps/${step.index}/args${reference.path}`,
          `step "${step.id}" uses the output of "${reference.stepId}" but does not depend on it (add it to dependsOn)`,
        );
      }
    }
    checkArgs(step, references, tools, add);
  }
}

const NO_REFERENCES: Reference[] = [];

// Paths are built only for a problem: most steps have none, and a 100,000-step plan would make
// hundreds of thousands of strings for nothing.
function checkTool(step: StepShape, goalSteps: boolean, tools: ToolCatalog | undefined, add: AddProblem): void {
  if (step.tool === undefined) {
    if (!goalSteps) {
      add(ErrorCodes.PLAN_INVALID, 'missing-tool', `/steps/${step.index}/tool`, `step "${step.id}" names no tool`);
    }
  } else if (typeof step.tool === 'string' && tools && !tools.has(step.tool)) {
    add(
      ErrorCodes.TOOL_UNKNOWN,
      'unknown-tool',
      `/steps/${step.index}/tool`,
      `tool "${step.tool}" is not registered (the whitelist has ${tools.list().length} tools)${didYouMean(step.tool, toolNames(tools))}`,
    );
  }
}

/** The reference problems that need no ancestry: forbidden (strict engine) and unknown step. */
function checkReferenceTarget(
  reference: Reference,
  target: number | undefined,
  path: string,
  engine: string,
  add: AddProblem,
): void {
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
  // A known step in a cyclic plan: the cycle is reported already, and ancestry is not defined there.
  if (target !== undefined) return;
  add(
    ErrorCodes.PLAN_INVALID,
    'reference-unknown-step',
    path,
    reference.form === 'string'
      ? `"$${reference.stepId}" references no step; write "$$${reference.stepId}" for a literal dollar`
      : `reference to unknown step "${reference.stepId}"`,
  );
}

function checkArgs(
  step: StepShape,
  references: readonly Reference[],
  tools: ToolCatalog | undefined,
  add: AddProblem,
): void {
  const tool = typeof step.tool === 'string' ? tools?.get(step.tool) : undefined;
  if (!tool || (step.args !== undefined && !isObject(step.args))) return;
  const result = compileSchema(tool.input).validate(step.args ?? {});
  if (result instanceof Promise || result.ok) return;
  // A reference stands for a value only known at run time: its location is not checked.
  const resolvedLater = references.map((reference) => reference.path);
  for (const issue of result.issues) {
    if (resolvedLater.some((path) => issue.path === path || issue.path.startsWith(`${path}/`))) continue;
    add(
      ErrorCodes.ARGUMENTS_INVALID,
      'invalid-args',
      `/steps/${step.index}/args${issue.path}`,
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
    codes.size === 1 && !codes.has(ErrorCodes.PLAN_INVALID) ? (problems[0]?.code as string) : ErrorCodes.PLAN_INVALID;
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
