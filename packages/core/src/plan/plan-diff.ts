import { canonicalJson } from './plan-digest.js';
import type { Plan, Step } from './plan-schema.js';

/** One difference between two revisions of a plan. Indexes are positions in `steps`. */
export type PlanChange =
  | { readonly kind: 'step-added'; readonly stepId: string; readonly index: number; readonly step: Step }
  | { readonly kind: 'step-removed'; readonly stepId: string; readonly index: number; readonly step: Step }
  | {
      readonly kind: 'step-changed';
      readonly stepId: string;
      readonly index: number;
      /** Step fields whose value differs (added and dropped fields included). */
      readonly fields: readonly string[];
      readonly before: Step;
      readonly after: Step;
    }
  | { readonly kind: 'step-moved'; readonly stepId: string; readonly from: number; readonly to: number }
  | { readonly kind: 'plan-changed'; readonly fields: readonly string[] };

/** Every change from one revision to the next; `[]` when the plans are equal. */
export type PlanDiff = readonly PlanChange[];

/** Fields that describe the revision itself rather than the work: never reported as changes. */
const REVISION_FIELDS = new Set(['steps', 'revision', 'parentDigest']);

function changedFields(before: Record<string, unknown>, after: Record<string, unknown>, skip?: Set<string>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  const fields: string[] = [];
  for (const key of keys) {
    if (skip?.has(key)) continue;
    if (canonicalJson(before[key]) !== canonicalJson(after[key])) fields.push(key);
  }
  return fields.sort();
}

/**
 * Positions (in `sequence`) of a longest strictly increasing subsequence: the steps that kept their
 * relative order. Patience sorting, O(n log n), so a 100,000-step plan diffs quickly.
 */
function longestIncreasing(sequence: readonly number[]): Set<number> {
  const tails: number[] = [];
  const previous = new Int32Array(sequence.length).fill(-1);
  for (let position = 0; position < sequence.length; position++) {
    const value = sequence[position] as number;
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((sequence[tails[middle] as number] as number) < value) low = middle + 1;
      else high = middle;
    }
    if (low > 0) previous[position] = tails[low - 1] as number;
    tails[low] = position;
  }
  const kept = new Set<number>();
  for (let position = tails.at(-1) ?? -1; position >= 0; position = previous[position] as number) kept.add(position);
  return kept;
}

/**
 * What changed from `before` to `after`: removed, added and changed steps (by id), steps that moved
 * (the fewest moves that explain the new order), and changed plan fields.
 */
export function diffPlans(before: Plan, after: Plan): PlanDiff {
  const changes: PlanChange[] = [];
  const planFields = changedFields(before, after, REVISION_FIELDS);
  if (planFields.length > 0) changes.push({ kind: 'plan-changed', fields: planFields });

  const oldIndex = new Map(before.steps.map((step, index) => [step.id, index]));
  const newIds = new Set(after.steps.map((step) => step.id));
  before.steps.forEach((step, index) => {
    if (!newIds.has(step.id)) changes.push({ kind: 'step-removed', stepId: step.id, index, step });
  });

  const common: { readonly step: Step; readonly from: number; readonly to: number }[] = [];
  after.steps.forEach((step, index) => {
    const from = oldIndex.get(step.id);
    if (from === undefined) {
      changes.push({ kind: 'step-added', stepId: step.id, index, step });
      return;
    }
    common.push({ step, from, to: index });
    const previous = before.steps[from] as Step;
    const fields = changedFields(previous, step);
    if (fields.length > 0) {
      changes.push({ kind: 'step-changed', stepId: step.id, index, fields, before: previous, after: step });
    }
  });

  const kept = longestIncreasing(common.map((entry) => entry.from));
  common.forEach((entry, position) => {
    if (!kept.has(position))
      changes.push({ kind: 'step-moved', stepId: entry.step.id, from: entry.from, to: entry.to });
  });
  return changes;
}
