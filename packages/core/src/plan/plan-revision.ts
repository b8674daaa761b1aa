import { ErrorCodes, StepwiseError } from '../errors.js';
import type { ToolCatalog } from '../tools/tool-registry.js';
import { diffPlans, type PlanDiff } from './plan-diff.js';
import { planDigest } from './plan-digest.js';
import type { Plan, Step } from './plan-schema.js';
import { type EngineKind, planInvalidError, validatePlan } from './validate-plan.js';

/** A revision would change, move or remove a step that has already started (code E005). */
export const PLAN_REVISION_CONFLICT = ErrorCodes.PLAN_REVISION_CONFLICT;

/** One change asked of a plan. Only steps that have not started may be edited, moved or removed. */
export type PlanEdit =
  /** Inserts a step before or after another (default: at the end). */
  | { readonly op: 'add'; readonly step: Step; readonly before?: string; readonly after?: string }
  | { readonly op: 'remove'; readonly stepId: string }
  /** Replaces the step with the same id as a whole. */
  | { readonly op: 'replace'; readonly step: Step }
  /** Sets fields of a step; a field set to `undefined` is dropped. The id cannot change. */
  | { readonly op: 'edit'; readonly stepId: string; readonly changes: Partial<Omit<Step, 'id'>> }
  /** Moves a step before or after another (reorder). */
  | { readonly op: 'move'; readonly stepId: string; readonly before?: string; readonly after?: string };

export interface RevisePlanOptions {
  /** Ids of steps that have started (running, finished, failed…): they may not be touched. */
  readonly started?: Iterable<string>;
  /** When given, the revised plan's tools and args are checked too. */
  readonly tools?: ToolCatalog;
  /** Validation rules of the engine that runs the plan. Default `dag`. */
  readonly engine?: EngineKind | (string & {});
  /** Whether steps without `tool` (goal steps) are admitted. Default: only under the agentic rules. */
  readonly goalSteps?: boolean;
  /**
   * The digest `plan` was journaled under, when `plan` is the journal's masked copy (a resumed run
   * whose plan held a secret): the chain names it as the parent. Default: the digest of `plan`.
   */
  readonly parentDigest?: string;
}

/** A new revision of a plan: the plan, where it sits in the digest chain, and what changed. */
export interface PlanRevision {
  /** `revision` and `parentDigest` set; valid for the options given. */
  readonly plan: Plan;
  readonly revision: number;
  /** Digest of the plan this revision was made from. */
  readonly parentDigest: string;
  /** Digest of `plan`; it covers `parentDigest`, so each digest seals the whole chain before it. */
  readonly digest: string;
  readonly diff: PlanDiff;
}

function conflict(stepId: string, index: number, what: string): StepwiseError {
  return new StepwiseError(
    PLAN_REVISION_CONFLICT,
    `step "${stepId}" has already started: a revision may not ${what} it`,
    { location: `/steps/${index}`, details: { stepId } },
  );
}

function unknownStep(stepId: string, editIndex: number, field: string): StepwiseError {
  return new StepwiseError(
    ErrorCodes.INPUT_INVALID,
    `edit ${editIndex} names step "${stepId}", which the plan does not have`,
    {
      location: `/edits/${editIndex}/${field}`,
      details: { stepId },
    },
  );
}

function withoutUndefined(step: Record<string, unknown>): Step {
  return Object.fromEntries(Object.entries(step).filter(([, value]) => value !== undefined)) as Step;
}

/** Where `before`/`after` puts a step in `steps` (default: the end). */
function insertionIndex(steps: readonly Step[], edit: { before?: string; after?: string }, editIndex: number): number {
  const anchor = edit.before ?? edit.after;
  if (anchor === undefined) return steps.length;
  const index = steps.findIndex((step) => step.id === anchor);
  if (index < 0) throw unknownStep(anchor, editIndex, edit.before === undefined ? 'after' : 'before');
  return edit.before === undefined ? index + 1 : index;
}

function applyEdit(steps: Step[], edit: PlanEdit, editIndex: number, started: ReadonlySet<string>): void {
  if (edit.op === 'add') {
    steps.splice(insertionIndex(steps, edit, editIndex), 0, edit.step);
    return;
  }
  const stepId = edit.op === 'replace' ? edit.step.id : edit.stepId;
  const index = steps.findIndex((step) => step.id === stepId);
  if (index < 0) throw unknownStep(stepId, editIndex, edit.op === 'replace' ? 'step/id' : 'stepId');
  if (started.has(stepId)) throw conflict(stepId, index, edit.op === 'move' ? 'move' : `${edit.op}`);
  const current = steps[index] as Step;
  switch (edit.op) {
    case 'remove':
      steps.splice(index, 1);
      return;
    case 'replace':
      steps[index] = edit.step;
      return;
    case 'edit':
      steps[index] = withoutUndefined({ ...current, ...edit.changes, id: current.id });
      return;
    case 'move': {
      steps.splice(index, 1);
      steps.splice(insertionIndex(steps, edit, editIndex), 0, current);
      return;
    }
  }
}

/** Seals `steps` as the next revision of `plan`, after checking it like any plan. */
function nextRevision(plan: Plan, steps: Step[], options: RevisePlanOptions): PlanRevision {
  const parentDigest = options.parentDigest ?? planDigest(plan);
  const revision = (plan.revision ?? 0) + 1;
  const candidate: Plan = { ...plan, steps, revision, parentDigest };
  const validation = validatePlan(candidate, {
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.engine ? { engine: options.engine } : {}),
    ...(options.goalSteps === undefined ? {} : { goalSteps: options.goalSteps }),
  });
  if (!validation.ok) throw planInvalidError(validation.problems);
  return {
    plan: validation.plan,
    revision,
    parentDigest,
    digest: planDigest(validation.plan),
    diff: diffPlans(plan, validation.plan),
  };
}

/**
 * Applies `edits` in order (add, remove, replace, edit, move) and returns the next revision.
 * Throws E005 at `/steps/<index>` when an edit touches a started step, E004 when an edit names a
 * step the plan does not have, and E001 (every problem in `details.problems`) when the result is
 * not a valid plan. The input plan is never modified.
 */
export function revisePlan(plan: Plan, edits: readonly PlanEdit[], options: RevisePlanOptions = {}): PlanRevision {
  const started = new Set(options.started ?? []);
  const steps = [...plan.steps];
  for (const [index, edit] of edits.entries()) applyEdit(steps, edit, index, started);
  return nextRevision(plan, steps, options);
}

/**
 * Regenerates the rest of a plan: the started steps stay as they are, in their order, and every
 * step that has not started is replaced by `remaining` (a new step may reuse a pending step's id,
 * which then shows as changed in the diff). Throws E005 when `remaining` reuses a started step's id.
 */
export function replaceRemainingSteps(
  plan: Plan,
  remaining: readonly Step[],
  options: RevisePlanOptions = {},
): PlanRevision {
  const started = new Set(options.started ?? []);
  const kept = plan.steps.filter((step) => started.has(step.id));
  remaining.forEach((step) => {
    if (started.has(step.id))
      throw conflict(
        step.id,
        plan.steps.findIndex((each) => each.id === step.id),
        'replace',
      );
  });
  return nextRevision(plan, [...kept, ...remaining], options);
}
