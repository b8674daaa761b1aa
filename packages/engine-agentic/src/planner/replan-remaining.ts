import {
  ErrorCodes,
  type Plan,
  type PlanProblem,
  type PlanRevision,
  replaceRemainingSteps,
  type Step,
  StepwiseError,
} from '@stepwise/core';
import { canonicalJson } from '@stepwise/core/engine';
import { type PlanCheck, type PlanFromGoalOptions, type PlannerCall, planFromGoal } from './plan-from-goal.js';

export interface ReplanRemainingOptions extends Omit<PlanFromGoalOptions, 'goal' | 'check'> {
  /** The plan as it runs now. */
  readonly plan: Plan;
  /** Steps that have started: they stay exactly as they are. */
  readonly started: Iterable<string>;
  /** Why the rest of the plan has to change, e.g. the failure of a step and its output. */
  readonly reason: string;
}

export interface ReplanRemainingResult {
  /** The next revision of `plan`: started steps kept, the rest replaced (digest chain, diff). */
  readonly revision: PlanRevision;
  readonly calls: readonly PlannerCall[];
}

function problemOf(error: unknown): PlanProblem[] {
  if (!StepwiseError.isInstance(error)) throw error;
  const listed = error.details?.problems;
  if (Array.isArray(listed)) return listed as PlanProblem[];
  return [{ code: error.code, kind: 'schema', path: error.location ?? '', message: error.message }];
}

function replanContext(options: ReplanRemainingOptions, started: ReadonlySet<string>): string {
  const lines = [
    `The current plan (revision ${options.plan.revision ?? 0}):`,
    JSON.stringify(options.plan),
    started.size > 0
      ? `Steps that have started and may not change: ${[...started].join(', ')}. Keep them exactly as they are; new steps need new ids.`
      : 'No step has started yet.',
    `Why the rest of the plan must change: ${options.reason}`,
    'Send the whole plan: the started steps unchanged, then the steps that replace the rest.',
  ];
  if (options.context) lines.push('', options.context);
  return lines.join('\n');
}

/**
 * Asks the model to regenerate the part of a plan that has not started, given why it must change:
 * the answer becomes `replaceRemainingSteps(plan, …)`, so started steps cannot change (an answer that
 * changes one is sent back with the problem), the result is validated like any plan, and it carries
 * the digest chain and the diff. Same model calls, repairs, journal and errors as `planFromGoal`.
 */
export async function replanRemaining(options: ReplanRemainingOptions): Promise<ReplanRemainingResult> {
  const started = new Set(options.started);
  const original = new Map(options.plan.steps.map((step) => [step.id, canonicalJson(step)]));
  let revision: PlanRevision | undefined;
  const check = (candidate: unknown): PlanCheck => {
    const steps = (candidate as { steps?: unknown }).steps;
    if (!Array.isArray(steps)) {
      return {
        ok: false,
        problems: [
          { code: ErrorCodes.PLAN_INVALID, kind: 'schema', path: '/steps', message: 'steps must be an array' },
        ],
      };
    }
    const problems: PlanProblem[] = [];
    const remaining: Step[] = [];
    steps.forEach((step: Step, index) => {
      if (!started.has(step?.id)) remaining.push(step);
      else if (canonicalJson(step) !== original.get(step.id)) {
        problems.push({
          code: ErrorCodes.PLAN_INVALID,
          kind: 'duplicate-step-id',
          path: `/steps/${index}`,
          message: `step "${step.id}" has started: keep it exactly as it was, or give the new step another id`,
        });
      }
    });
    if (problems.length > 0) return { ok: false, problems };
    try {
      revision = replaceRemainingSteps(options.plan, remaining, {
        started,
        tools: options.tools,
        engine: options.engine ?? 'dag',
      });
    } catch (error) {
      return { ok: false, problems: problemOf(error) };
    }
    return { ok: true, plan: revision.plan, order: [] };
  };
  const result = await planFromGoal({
    ...options,
    goal: options.plan.goal ?? options.reason,
    context: replanContext(options, started),
    check,
  });
  return { revision: revision as PlanRevision, calls: result.calls };
}
