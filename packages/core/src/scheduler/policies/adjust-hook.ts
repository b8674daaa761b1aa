import { ErrorCodes, StepwiseError } from '../../errors.js';
import type { StepResult } from '../../journal/events.js';
import type { RunJournal } from '../../journal/journal.js';
import type { PlanEdit } from '../../plan/plan-revision.js';
import type { Plan, Step } from '../../plan/plan-schema.js';

/** What an adjust hook answers once a step has ended. */
export type AdjustDecision =
  /** Carry on with the plan as it is. */
  | { readonly action: 'continue'; readonly reason?: string }
  /** Revise the steps that have not started (add, replace, edit, move, remove), then carry on. */
  | { readonly action: 'revise'; readonly edits: readonly PlanEdit[]; readonly reason?: string }
  /** End the run now: in-flight steps are cancelled (the run ends `cancelled`, or `failed` after a failure). */
  | { readonly action: 'stop'; readonly reason?: string };

/** What an adjust hook learns besides the step and its result. */
export interface AdjustContext {
  readonly runId: string;
  /** The plan as it is now (its latest revision). */
  readonly plan: Plan;
  /** Outputs of the steps that succeeded so far (redacted, as journaled). */
  readonly outputs: ReadonlyMap<string, unknown>;
  /** Ids of the steps a revision may no longer touch (started or ended). */
  readonly started: readonly string[];
  /** Aborted when the run is cancelled or fails; a slow hook should honour it. */
  readonly signal: AbortSignal;
  /** The run's journal, for the hook's own records (a model-backed hook journals its `model-call`s). */
  readonly journal: RunJournal;
}

/**
 * Asked after each step ends (succeeded, or failed once retries and the recovery hook are done),
 * before its dependents are released, so a revision can still put steps in front of them.
 * Return `undefined` to continue. A hook that throws, or answers something that is not a decision,
 * is journaled with its error and the run continues unrevised. When a crash came after a step's
 * end and before its decision was journaled, the resume asks about that step first, once; a
 * journaled decision is never asked again (a `stop` carries on), and a run started without a hook
 * is not asked about steps that ended before the resume.
 */
export type AdjustHook = (
  step: Step,
  result: StepResult,
  context: AdjustContext,
) => Promise<AdjustDecision | undefined> | AdjustDecision | undefined;

const EDIT_OPS = new Set(['add', 'remove', 'replace', 'edit', 'move']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidDecision(message: string, location: string): StepwiseError {
  return new StepwiseError(ErrorCodes.INPUT_INVALID, `adjust decision: ${message}`, { location });
}

/**
 * Checks what an adjust hook returned (hooks are often model-driven: checked, not trusted).
 * `undefined` is `continue`; anything else that is not a decision throws E004 at its JSON path.
 * The edits' steps are checked later, when the revision is validated as a plan.
 */
export function normalizeAdjustDecision(value: unknown): AdjustDecision {
  if (value === undefined) return { action: 'continue' };
  if (!isPlainObject(value)) throw invalidDecision('expected an object with "action"', '/');
  const reason = typeof value.reason === 'string' && value.reason.length > 0 ? { reason: value.reason } : {};
  switch (value.action) {
    case 'continue':
    case 'stop':
      return { action: value.action, ...reason };
    case 'revise': {
      if (!Array.isArray(value.edits) || value.edits.length === 0) {
        throw invalidDecision('"revise" needs a non-empty "edits" array', '/edits');
      }
      value.edits.forEach((edit: unknown, index) => {
        if (!isPlainObject(edit) || typeof edit.op !== 'string' || !EDIT_OPS.has(edit.op)) {
          throw invalidDecision(`edit ${index} needs "op": one of ${[...EDIT_OPS].join(', ')}`, `/edits/${index}/op`);
        }
      });
      return { action: 'revise', edits: value.edits as PlanEdit[], ...reason };
    }
    default:
      throw invalidDecision(
        `"action" must be "continue", "revise" or "stop", got ${JSON.stringify(value.action)}`,
        '/action',
      );
  }
}
